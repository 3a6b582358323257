// analysis: taint
// an array whose elements are all written in turn, with nothing that may read it between, holds only what they were written with
#include <stdlib.h>

int main(void) {
  int sizes[2];
  sizes[0] = atoi(getenv("N"));
  sizes[1] = 16;
  // note: over-approximation: the array is one location, so every element holds N's value
  char *a = malloc(sizes[1]); // expect: taint malloc
  sizes[0] = 8;
  sizes[1] = 16;
  char *b = malloc(sizes[0]);
  int some[2];
  some[0] = atoi(getenv("M"));
  some[1] = 16;
  some[1] = 32;
  // note: one element written again: what the other holds is still there
  char *c = malloc(some[1]); // expect: taint malloc
  free(a);
  free(b);
  free(c);
  return 0;
}
