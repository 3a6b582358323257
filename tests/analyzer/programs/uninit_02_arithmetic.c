// analysis: uninit
// a value computed from an uninitialized value is uninitialized; storing it keeps its target uninitialized
#include <stdio.h>

int main(void) {
  int x;
  int y = x * 2 + 1; // expect: uninit x
  int z = y - x; // expect: uninit y, uninit x
  // note: x is loaded twice on the next line: one finding per (line, variable)
  int w = x + x; // expect: uninit x
  int k = 3;
  k = k + 1;
  printf("%d %d %d\n", z, w, k); // expect: uninit z, uninit w
  return 0;
}
