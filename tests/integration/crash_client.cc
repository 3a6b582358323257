// A client that opens a session, allocates and fills a buffer, prints "ready", then waits to
// be killed: integration tests use it to drop a connection without any goodbye.
//   sluice_crash_client HOST:PORT BYTES
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sluice/client/remote_dispatch.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s HOST:PORT BYTES\n", argv[0]);
    return 2;
  }
  const size_t bytes = std::strtoull(argv[2], nullptr, 10);
  auto dispatch = sluice::RemoteDispatch::Connect({.target = argv[1], .client_name = "crash"});
  if (!dispatch.ok()) {
    std::fprintf(stderr, "%s\n", dispatch.status().ToString().c_str());
    return 1;
  }
  auto buffer = (*dispatch)->Allocate(bytes);
  if (!buffer.ok() || !(*dispatch)->Upload(*buffer, std::vector<uint8_t>(bytes, 7)).ok()) {
    std::fprintf(stderr, "allocation or upload failed\n");
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();  // until SIGKILL
}
