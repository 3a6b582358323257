// analysis: uninit
// a struct passed or returned by value travels in registers, its fields read through a struct of the registers' own layout: the pointer in it still points where it did
#include <stdio.h>

struct ref {
  short count;
  short limit;
  int *at;
};

static int get(struct ref r) {
  return *r.at; // expect: uninit x
}

static struct ref wrap(int *at) {
  struct ref r = {0, 0, at};
  return r;
}

int main(void) {
  int x;
  int y = 1;
  struct ref r = {0, 0, &x};
  struct ref s = wrap(&y);
  printf("%d %d\n", get(r), *s.at);
  return 0;
}
