// analysis: uninit
// returning an uninitialized value: the finding is the load in the callee; a caller variable that stores the result holds an uninitialized value
#include <stdio.h>

static int make(void) {
  int t;
  return t; // expect: uninit t
}

static int make_ok(void) {
  int t = 3;
  return t;
}

int main(void) {
  int y = make();
  int z = make_ok();
  // note: the call's result is not a load of a variable: no finding on the next line
  printf("%d\n", make() + 1);
  printf("%d\n", z);
  printf("%d\n", y); // expect: uninit y
  return 0;
}
