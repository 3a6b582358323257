// analysis: taint
// memcpy and memmove copy taint from the source buffer to the destination
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  char in[64];
  char out[64];
  char moved[64];
  if (!fgets(in, sizeof in, stdin))
    return 1;
  memcpy(out, in, sizeof out);
  system(out); // expect: taint system
  memmove(moved, out, sizeof moved);
  system(moved); // expect: taint system
  char fixed[8];
  memcpy(fixed, "whoami", 7);
  system(fixed);
  return 0;
}
