// analysis: uninit
// recency and a failed allocation: where the variable an allocation was kept in is tested for null, the null branch has no last object, so what the allocation made does not become an older object's
#include <stdio.h>
#include <stdlib.h>

struct item {
  int key;
  int value;
};

static struct item *make(int key) {
  struct item *m = malloc(sizeof *m);
  if (m == NULL)
    return NULL;
  m->key = key;
  m->value = 0;
  return m;
}

static struct item *half(int key) {
  struct item *h = malloc(sizeof *h);
  if (!h)
    return NULL;
  h->key = key;
  return h;
}

int main(void) {
  struct item *a = make(1);
  struct item *b = make(2);
  if (a == NULL || b == NULL)
    return 1;
  // note: b's allocation made a's object an older one; a failed allocation made nothing to join it
  printf("%d %d\n", a->value, b->value);
  struct item *c = half(1);
  struct item *d = half(2);
  if (c == NULL || d == NULL)
    return 1;
  printf("%d\n", c->key);
  printf("%d\n", c->value); // expect: uninit heap@uninit_41_allocation_failed.c:21.value
  return 0;
}
