/* A C11 program outside the Sluice tree that uses the installed C ABI: an in-process
 * dispatcher, a buffer written and read back by range. Prints one line and exits 0 when
 * everything behaved. Built through find_package (Sluice::c_abi) and through pkg-config. */
#include <stdio.h>
#include <string.h>

#include "sluice/client/c/sluice.h"

int main(void) {
  if (sluice_abi_version() != SLUICE_C_ABI_VERSION) return 1;
  sluice_dispatch* d = NULL;
  sluice_status* status = sluice_local_open(&d);
  if (status != NULL) {
    fprintf(stderr, "consumer_c: %s\n", sluice_status_message(status));
    sluice_status_free(status);
    return 1;
  }
  sluice_resource r;
  const unsigned char bytes[4] = {1, 2, 3, 4};
  unsigned char back[2] = {0, 0};
  int ok = sluice_allocate(d, 4, &r) == NULL && sluice_upload(d, r, bytes, 4) == NULL &&
           sluice_download_range(d, r, 1, 2, back) == NULL && back[0] == 2 && back[1] == 3 &&
           sluice_free(d, r) == NULL;
  sluice_status* again = sluice_free(d, r);
  ok = ok && sluice_status_code(again) == SLUICE_NOT_FOUND;
  sluice_status_free(again);
  printf("consumer_c: %s on %s\n", ok ? "ok" : "FAILED", sluice_backend_id(d));
  sluice_dispatch_close(d);
  return ok ? 0 : 1;
}
