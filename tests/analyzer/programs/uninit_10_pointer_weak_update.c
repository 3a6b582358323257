// analysis: uninit
// a store through a pointer that may point to two locals is a weak update: neither becomes initialized
#include <stdio.h>

int main(int argc, char **argv) {
  int a;
  int b;
  int *p;
  if (argc > 1)
    p = &a;
  else
    p = &b;
  *p = 1;
  // note: weak update: p may point to a or b, so the store initializes neither
  printf("%d\n", a); // expect: uninit a
  printf("%d\n", b); // expect: uninit b
  printf("%d\n", *p); // expect: uninit a, uninit b
  int c;
  int *r = &c;
  int d = 0;
  r = &d;
  *r = 2;
  // note: points-to is flow-insensitive: r may point to c or d at every point, so *r = 2 is weak too
  printf("%d\n", c); // expect: uninit c
  printf("%d\n", d);
  (void)argv;
  return 0;
}
