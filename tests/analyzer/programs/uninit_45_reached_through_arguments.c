// analysis: uninit
// a callee reaches a local only through what its arguments lead to: a call given another holder does not read it, though the callee reads through the same field
#include <stdio.h>

struct holder {
  int *value;
};

static int show(struct holder *h) {
  return *h->value; // expect: uninit z
}

int main(void) {
  int x = 1;
  int y;
  int z;
  struct holder hx = {&x};
  struct holder hy = {&y};
  struct holder hz = {&z};
  int a = show(&hx);
  y = 2;
  int b = show(&hy);
  int c = show(&hz);
  printf("%d %d %d\n", a, b, c); // expect: uninit c
  return 0;
}
