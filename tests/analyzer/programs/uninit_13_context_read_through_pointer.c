// analysis: uninit
// one function reads through its pointer parameter in two contexts: the uninitialized result of one call does not reach the other call's result
#include <stdio.h>

static int get(int *p) {
  return *p; // expect: uninit u
}

static int helper(void) {
  int u;
  return get(&u);
}

int main(void) {
  int a = 1;
  // note: r is clean: IFDS returns get's uninitialized result only to the call in helper (no unrealizable path)
  int r = get(&a);
  printf("%d\n", r);
  int s = helper();
  printf("%d\n", s); // expect: uninit s
  return 0;
}
