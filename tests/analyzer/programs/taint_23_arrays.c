// analysis: taint
// arrays are one location: a tainted element taints every element, and a clean write of one element never cleans it
#include <stdlib.h>

int main(void) {
  int sizes[4];
  sizes[0] = atoi(getenv("N"));
  sizes[1] = 8;
  // note: over-approximation: sizes is one location, sizes[1] = 8 is a weak update
  char *a = malloc(sizes[1]); // expect: taint malloc
  char *cmds[2];
  cmds[0] = "ls";
  cmds[1] = getenv("CMD");
  // note: over-approximation: the element loaded may be the tainted one
  system(cmds[0]); // expect: taint system
  int clean[2];
  clean[0] = 4;
  clean[1] = 8;
  char *b = malloc(clean[1]);
  free(a);
  free(b);
  return 0;
}
