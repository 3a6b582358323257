// analysis: uninit
// the edges of the strong updates: a byte walk over a struct whose first field is an array reaches every field, a callee that copies a struct onto itself reads it first, a memset through a parameter initializes each caller's struct, and a recursive function's local is every activation's
#include <stdio.h>
#include <string.h>

struct rec {
  char tag[4];
  int n;
};

struct pair {
  int a;
  int b;
};

int *shared;

static void move_onto(struct pair *d, struct pair *s) { memmove(d, s, sizeof *d); }

static void wipe(struct pair *p) { memset(p, 0, sizeof *p); }

static void set_one(int *q) { *q = 1; }

static int inner_reads_outer(int *p, int depth) {
  int x;
  if (depth > 0)
    return inner_reads_outer(&x, 0) + x; // expect: uninit x
  set_one(p); // writes the outer activation's x, not this one's
  return x; // expect: uninit x
}

static void peek(void) { printf("%d\n", *shared); } // expect: uninit y

static void given_out_before(int depth) {
  int y;
  peek(); // in the inner activation, the outer y's address is given out already
  if (depth > 0) {
    shared = &y;
    given_out_before(0);
  }
}

int main(void) {
  struct rec r;
  memcpy(r.tag, "abc", 4);
  const unsigned char *byte = (const unsigned char *)&r;
  int sum = 0;
  for (unsigned i = 0; i < sizeof r; ++i)
    sum += byte[i]; // expect: uninit r.n, uninit sum
  struct pair x;
  move_onto(&x, &x);
  printf("%d\n", x.a); // expect: uninit x.a
  struct pair u;
  struct pair v;
  wipe(&u);
  wipe(&v);
  // note: sum holds what the walk read of r.n
  printf("%d %d %d\n", u.a, v.b, sum); // expect: uninit sum
  int z = 0;
  shared = &z;
  given_out_before(1);
  printf("%d\n", inner_reads_outer(NULL, 1));
  return 0;
}
