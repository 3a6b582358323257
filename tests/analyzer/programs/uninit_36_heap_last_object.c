// analysis: uninit
// recency: a store through the variable an allocation was kept in replaces the site's last object, the older objects of the site keep what they held
#include <stdio.h>
#include <stdlib.h>

struct item {
  int key;
  struct item *next;
};

static struct item *chain(int depth) {
  struct item *it = malloc(sizeof *it);
  if (it == NULL)
    exit(1);
  it->next = NULL;
  if (depth > 0) {
    it->key = 0;
    it->next = chain(depth - 1);
    // note: the call ran the allocation again, so `it` may not be the site's last object: the store is weak
    it->key = depth;
    printf("%d\n", it->next->key); // expect: uninit heap@uninit_36_heap_last_object.c:12.key
  }
  return it;
}

static struct item *make(int key) {
  struct item *m = malloc(sizeof *m);
  if (m == NULL)
    exit(1);
  m->key = key; // expect: uninit key
  m->next = NULL;
  return m;
}

int main(int argc, char **argv) {
  int unset;
  struct item *x = make(unset); // expect: uninit unset
  struct item *y = make(1);
  // note: y's allocation made x's object an older one, which keeps its key without a value
  printf("%d %d\n", x->key, y->key); // expect: uninit heap@uninit_36_heap_last_object.c:27.key
  struct item *first = NULL;
  for (int i = 0; i < argc; ++i) {
    struct item *made = malloc(sizeof *made);
    if (made == NULL)
      return 1;
    made->key = i;
    if (i == 0)
      first = made;
    else
      made->next = first;
  }
  if (first == NULL)
    return 1;
  printf("%d\n", first->key);
  // note: the first object's next is never written, and an older object keeps it so
  printf("%p\n", (void *)first->next); // expect: uninit heap@uninit_36_heap_last_object.c:43.next
  struct item *fresh = malloc(sizeof *fresh);
  if (fresh == NULL)
    return 1;
  fresh->key = 1;
  printf("%d\n", fresh->key);
  printf("%p\n", (void *)fresh->next); // expect: uninit heap@uninit_36_heap_last_object.c:57.next
  // note: over-approximation: chain's last store into key is weak, and the site's last object (made deepest) never has its key written
  printf("%d\n", chain(2)->key); // expect: uninit heap@uninit_36_heap_last_object.c:12.key
  (void)argv;
  return 0;
}
