// analysis: uninit
// functions that allocate and write, keep or reallocate what they return (Lua's luaC_newobj, an xrealloc) make an object for each call of them
#include <stdio.h>
#include <stdlib.h>

struct box {
  int kind;
  int *value;
};

static int made;

static struct box *new_box(int kind, size_t size) {
  struct box *b = realloc(NULL, size);
  if (b == NULL)
    exit(1);
  b->kind = kind;
  b->value = NULL;
  made++;
  return b;
}

static int **grow(int **old, size_t count) {
  int **p = realloc(old, count * sizeof *p);
  if (p == NULL)
    exit(1);
  return p;
}

struct node {
  struct node *next;
  int *value;
};

static struct node *list;

static struct node *push(int *value, size_t size) {
  struct node *n = realloc(NULL, size);
  if (n == NULL)
    exit(1);
  n->value = value;
  n->next = list;
  list = n;
  return n;
}

int main(void) {
  int x;
  int y = 2;
  struct box *a = new_box(1, sizeof *a);
  struct box *b = new_box(2, sizeof *b);
  a->value = &x;
  b->value = &y;
  // note: over-approximation: every call of new_box writes every object of its calls, weakly, and realloc's memory has no value
  int r = *b->value; // expect: uninit heap@uninit_51_allocating_functions.c:51
  // note: b is an object of its own: only a's holds &x
  r += *a->value; // expect: uninit x, uninit heap@uninit_51_allocating_functions.c:50
  int z;
  int w = 3;
  int **first = grow(NULL, 1);
  int **second = grow(NULL, 1);
  first[0] = &z;
  second[0] = &w;
  int **grown = grow(first, 2);
  // note: over-approximation: an array is one location, which realloc leaves without a value
  r += *second[0]; // expect: uninit heap@uninit_51_allocating_functions.c:61, uninit r
  // note: the reallocation at this call copies first's object, &z with it
  r += *grown[0]; // expect: uninit z, uninit heap@uninit_51_allocating_functions.c:64, uninit r
  int v;
  // note: its result is not used, but push keeps what it allocates: the call is still an object
  push(&v, sizeof(struct node));
  printf("%d %d %d\n", r, made, *list->value); // expect: uninit r, uninit v, uninit heap@uninit_51_allocating_functions.c:71
  return 0;
}
