// analysis: uninit
// an array whose elements are all written in turn, with nothing that may read it between, holds what they were written with
#include <stdio.h>

struct item {
  char tag;
  int value;
};

static void set(int *p, int v) { *p = v; }

static int set_then_read(int *to, const int *from) {
  *to = 0;
  return *from; // expect: uninit g
}

static int filled(int x) {
  int a[3];
  a[0] = x;
  a[1] = 2;
  a[2] = 3;
  return a[1];
}

static int filled_by_calls(int x) {
  int b[2];
  set(&b[0], x);
  set(&b[1], 2);
  return b[0];
}

static int filled_around_padding(int x) {
  struct item items[2];
  items[0].tag = 'a';
  items[0].value = x;
  items[1].tag = 'b';
  items[1].value = 2;
  return items[1].value;
}

static int filled_in_part(int x) {
  int c[3];
  c[0] = x;
  c[1] = 2;
  return c[1]; // expect: uninit c
}

static int read_between(int x) {
  int d[2];
  d[0] = x;
  int y = d[0]; // expect: uninit d
  d[1] = 2;
  return d[1] + y; // expect: uninit d, uninit y
}

static int filled_on_two_branches(int x) {
  int e[2];
  e[0] = x;
  if (x > 0)
    e[1] = 1;
  else
    e[1] = 2;
  // note: over-approximation: the writes are in different blocks, each a weak update
  return e[0]; // expect: uninit e
}

static int read_by_the_call_that_writes(void) {
  int g[2];
  // note: the call reads g[1] through its other argument: it begins no run
  int r = set_then_read(&g[0], &g[1]);
  g[1] = 2;
  return g[0] + r; // expect: uninit g, uninit r
}

static int filled_with_a_value_not_given(int x) {
  int u;
  int f[2];
  f[0] = x;
  f[1] = u; // expect: uninit u
  // note: f holds u's value, which has none
  return f[0]; // expect: uninit f
}

int main(int argc, char **argv) {
  (void)argv;
  printf("%d\n", filled(argc) + filled_by_calls(argc) + filled_around_padding(argc));
  printf("%d\n", filled_in_part(argc) + read_between(argc) + filled_on_two_branches(argc));
  printf("%d\n", filled_with_a_value_not_given(argc) + read_by_the_call_that_writes());
  return 0;
}
