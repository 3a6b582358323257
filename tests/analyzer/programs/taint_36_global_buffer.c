// analysis: taint
// a global array passed by its name to library calls: what scanf reads into it reaches system
#include <stdio.h>
#include <stdlib.h>

char command[64];
char fixed[16] = "true";

int main(void) {
  if (scanf("%63s", command) != 1) return 1;
  system(fixed);
  system(command); // expect: taint system
  return 0;
}
