// analysis: uninit
// indirect calls are resolved by type: every address-taken function of the call's type is a possible target
#include <stdio.h>

static void set_one(int *p) { *p = 1; }
static void set_two(int *p) { *p = 2; }
static void leave(int *p) { (void)p; }

void (*registry[])(int *) = {leave};

int main(int argc, char **argv) {
  void (*f)(int *) = argc > 1 ? set_one : set_two;
  int x;
  f(&x);
  // note: over-approximation by type: leave has the call's type and its address is taken (registry), so it is a target and x may stay uninitialized
  printf("%d\n", x); // expect: uninit x
  (void)argv;
  return 0;
}
