// analysis: uninit
// out-parameters: a callee that always writes *p initializes the caller's local, one that writes only sometimes does not
#include <stdio.h>

static void set_always(int *p) { *p = 42; }

static void set_sometimes(int *p, int c) {
  if (c > 1)
    *p = 7;
}

int main(int argc, char **argv) {
  int x;
  set_always(&x);
  printf("%d\n", x);
  int y;
  set_sometimes(&y, argc);
  printf("%d\n", y); // expect: uninit y
  (void)argv;
  return 0;
}
