// analysis: uninit
// one out-parameter function called with two different locals: its store through p is a weak update
#include <stdio.h>

static void init(int *p) { *p = 0; }

int main(void) {
  int a;
  int b;
  init(&a);
  init(&b);
  // note: over-approximation: points-to is context-insensitive, p may point to a or b, so *p = 0 initializes neither
  printf("%d\n", a); // expect: uninit a
  printf("%d\n", b); // expect: uninit b
  return 0;
}
