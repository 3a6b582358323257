// Copies for memory that someone else reads next.
#ifndef SLUICE_BASE_COPY_H_
#define SLUICE_BASE_COPY_H_

#include <cstdint>

namespace sluice {

// memcpy of `n` bytes whose destination another process, thread or device reads next and the
// copier does not: on x86-64 the aligned middle is written with non-temporal stores, which
// neither read the destination's lines first nor push the copier's working set out of its
// cache; elsewhere, and for the ragged ends, memcpy. The ranges must not overlap. The stores
// are fenced before it returns, so whatever tells the reader to go may follow at once.
void CopyForReader(void* dst, const void* src, uint64_t n);

}  // namespace sluice

#endif  // SLUICE_BASE_COPY_H_
