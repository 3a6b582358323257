// analysis: uninit
// an uninitialized argument passed by value: found at the call's load, and again where the callee reads its parameter in that context
#include <stdio.h>

static int twice(int v) {
  // note: the parameter holds the caller's uninitialized value (as in PhASAR); twice(argc) alone would not be reported
  return v * 2; // expect: uninit v
}

int main(int argc, char **argv) {
  int x;
  printf("%d\n", twice(x)); // expect: uninit x
  printf("%d\n", twice(argc));
  (void)argv;
  return 0;
}
