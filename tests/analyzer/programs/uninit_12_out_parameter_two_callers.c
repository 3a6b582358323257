// analysis: uninit
// one out-parameter function called with two different locals: p may point to either, but the callee writes *p before reading it, so each call initializes its own
#include <stdio.h>

static void init(int *p) { *p = 0; }

int main(void) {
  int a;
  int b;
  int c;
  init(&a);
  init(&b);
  printf("%d\n", a);
  printf("%d\n", b);
  printf("%d\n", c); // expect: uninit c
  return 0;
}
