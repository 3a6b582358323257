// analysis: uninit
// nested structs: the fields of an inner struct are locations of their own, named by their path
#include <stdio.h>

struct inner {
  int a;
  int b;
};

struct outer {
  int tag;
  struct inner in;
};

int main(void) {
  struct outer o;
  o.tag = 1;
  o.in.a = 2;
  printf("%d %d\n", o.tag, o.in.a);
  printf("%d\n", o.in.b); // expect: uninit o.in.b
  struct inner *pi = &o.in;
  printf("%d\n", pi->a);
  pi->b = 5;
  printf("%d\n", o.in.b);
  printf("%d\n", pi->a + pi->b);
  return 0;
}
