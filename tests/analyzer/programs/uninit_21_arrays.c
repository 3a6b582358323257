// analysis: uninit
// arrays are one location: writing some of the elements, or all of them in a loop, never initializes the array, so reading any element is a finding
#include <stdio.h>

int main(int argc, char **argv) {
  int a[4];
  a[0] = 1;
  // note: over-approximation: a[0] = 1 is a weak update of the one location for all of a
  printf("%d\n", a[1]); // expect: uninit a
  printf("%d\n", a[0]); // expect: uninit a
  int b[3];
  for (int i = 0; i < 3; i++)
    b[i] = i;
  // note: over-approximation: even a loop that writes every element leaves b possibly uninitialized
  printf("%d\n", b[2]); // expect: uninit b
  int idx = argc;
  int c[2];
  int *p = c;
  p[idx % 2] = 3;
  printf("%d\n", *p); // expect: uninit c
  (void)argv;
  return 0;
}
