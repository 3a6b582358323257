// analysis: uninit
// a call reaches a caller's local only through a pointer it is passed, unless the local's address is kept in memory (a global, a struct) that the callee reads
#include <stdio.h>

int *watched;

struct holder {
  int *target;
};

static void peek(void) { printf("%d\n", *watched); } // expect: uninit v

static void through_holder(const struct holder *h) { printf("%d\n", *h->target); } // expect: uninit z

static void read_it(const int *p) { printf("%d\n", *p); } // expect: uninit y

static void forward(const int *p) { read_it(p); }

static void nothing(void) {}

int main(void) {
  int v;
  watched = &v;
  peek();
  int z;
  struct holder h;
  h.target = &z;
  through_holder(&h);
  int y;
  nothing();
  forward(&y);
  int u;
  nothing(); // u goes around the call
  printf("%d\n", u); // expect: uninit u
  return 0;
}
