// analysis: uninit
// allocation wrappers: each call of a function that only returns fresh memory (or dies) is an allocation site of its own, with fields where its size is one struct's; a function that keeps what it allocates is no wrapper
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pair {
  int a;
  int b;
};

static void die(const char *why) {
  fprintf(stderr, "%s\n", why);
  exit(1);
}

static void *xmalloc(size_t size) {
  void *p;
  if (size == 0)
    size = 1;
  p = malloc(size);
  if (p == NULL)
    die("out of memory");
  return p;
}

static void *items(unsigned count, unsigned size) { return malloc(count * size); }

static void *zeroed(size_t size) { return calloc(1, size); }

static void *kept;

static void *keep(size_t size) {
  void *p = malloc(size);
  kept = p;
  return p;
}

int main(void) {
  char *t = xmalloc(16);
  char *u = xmalloc(16);
  if (fgets(t, 16, stdin) == NULL)
    return 1;
  printf("%c\n", t[0]);
  // note: u is an object of its own: the fgets into t does not give it a value
  printf("%c\n", u[0]); // expect: uninit heap@uninit_40_allocation_wrappers.c:41
  struct pair *p = items(1, sizeof *p);
  if (p == NULL)
    return 1;
  p->a = 1;
  printf("%d\n", p->a);
  printf("%d\n", p->b); // expect: uninit heap@uninit_40_allocation_wrappers.c:47.b
  int *z = zeroed(4 * sizeof *z);
  if (z == NULL)
    return 1;
  printf("%d\n", z[1]);
  char *k = keep(8);
  char *l = keep(8);
  if (k == NULL || l == NULL)
    return 1;
  strcpy(l, "set");
  // note: over-approximation: keep is no wrapper (it keeps the allocation), so k and l are its one object, and the strcpy into l is weak
  printf("%c\n", k[0]); // expect: uninit heap@uninit_40_allocation_wrappers.c:34
  printf("%c\n", l[0]); // expect: uninit heap@uninit_40_allocation_wrappers.c:34
  return 0;
}
