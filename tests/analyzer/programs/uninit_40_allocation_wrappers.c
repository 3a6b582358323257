// analysis: uninit
// allocation wrappers: each call of a function that only returns fresh memory (or dies) that allocates one struct, kept in a variable, is an allocation site of its own with fields; its other calls share the allocation inside it; a function that keeps what it allocates is no wrapper
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
  struct pair *s = xmalloc(sizeof *s);
  struct pair *t = xmalloc(sizeof *t);
  s->a = 1;
  s->b = 2;
  t->a = 3;
  printf("%d %d %d\n", s->a, s->b, t->a);
  // note: t is an object of its own, whose b nothing writes
  printf("%d\n", t->b); // expect: uninit heap@uninit_40_allocation_wrappers.c:41.b
  char *u = xmalloc(16);
  char *v = xmalloc(16);
  if (fgets(u, 16, stdin) == NULL)
    return 1;
  // note: over-approximation (a missed read): calls of xmalloc that allocate no struct share its one object, which fgets into u is taken to fill
  printf("%c %c\n", u[0], v[0]);
  struct pair *p = items(1, sizeof *p);
  if (p == NULL)
    return 1;
  p->a = 1;
  printf("%d\n", p->a);
  printf("%d\n", p->b); // expect: uninit heap@uninit_40_allocation_wrappers.c:54.b
  struct pair *z = zeroed(sizeof *z);
  if (z == NULL)
    return 1;
  printf("%d\n", z->b);
  struct pair *k = keep(sizeof *k);
  struct pair *l = keep(sizeof *l);
  if (k == NULL || l == NULL)
    return 1;
  l->a = 1;
  l->b = 2;
  // note: over-approximation: keep is no wrapper (it keeps the allocation) but an allocating function, so k and l are objects of their own calls, with fields, which its allocation leaves without a value and the stores through l only add to
  printf("%d\n", k->a); // expect: uninit heap@uninit_40_allocation_wrappers.c:64.a
  printf("%d\n", l->b); // expect: uninit heap@uninit_40_allocation_wrappers.c:65.b
  return 0;
}
