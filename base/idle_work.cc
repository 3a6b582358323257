#include "sluice/base/idle_work.h"

#include <pthread.h>
#include <sched.h>

namespace sluice {

bool RunOnIdleCoresOnly() {
#ifdef SCHED_IDLE
  const sched_param param{};  // SCHED_IDLE takes priority 0
  return pthread_setschedparam(pthread_self(), SCHED_IDLE, &param) == 0;
#else
  return false;
#endif
}

}  // namespace sluice
