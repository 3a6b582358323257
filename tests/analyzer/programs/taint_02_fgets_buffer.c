// analysis: taint
// fgets taints the buffer it fills; a sink given a pointer to that buffer is a finding
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char buf[128];
  char other[16] = "date";
  if (!fgets(buf, sizeof buf, stdin))
    return 1;
  system(other);
  system(buf); // expect: taint system
  return 0;
}
