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

struct two {
  int *first;
  int *second;
};

static struct two *new_two(size_t size) {
  struct two *t = realloc(NULL, size);
  if (t == NULL)
    exit(1);
  t->first = NULL;
  return t;
}

struct header {
  struct header *next;
  int kind;
};

struct point {
  struct header h;
  int *x;
  int *y;
};

static struct header *objects;

static struct header *new_object(int kind, size_t size) {
  struct header *o = realloc(NULL, size);
  if (o == NULL)
    exit(1);
  o->kind = kind;
  o->next = objects;
  objects = o;
  return o;
}

int main(void) {
  int x;
  int y = 2;
  struct box *a = new_box(1, sizeof *a);
  struct box *b = new_box(2, sizeof *b);
  a->value = &x;
  b->value = &y;
  // note: over-approximation: every call of new_box writes every object of its calls, weakly, and realloc's memory has no value
  int r = *b->value; // expect: uninit heap@uninit_51_allocating_functions.c:87.value
  // note: b is an object of its own (with fields: its size is one box's, read as a box): only a's holds &x
  r += *a->value; // expect: uninit x, uninit heap@uninit_51_allocating_functions.c:86.value
  int z;
  int w = 3;
  int **first = grow(NULL, 1);
  int **second = grow(NULL, 1);
  first[0] = &z;
  second[0] = &w;
  int **grown = grow(first, 2);
  // note: over-approximation: an array is one location, which realloc leaves without a value
  r += *second[0]; // expect: uninit heap@uninit_51_allocating_functions.c:97, uninit r
  // note: the reallocation at this call copies first's object, &z with it
  r += *grown[0]; // expect: uninit z, uninit heap@uninit_51_allocating_functions.c:100, uninit r
  int s;
  int u = 4;
  // note: a call of one struct's size, kept in a variable that reads that struct, is an object with fields
  struct two *pair = new_two(sizeof *pair);
  pair->first = &s;
  pair->second = &u;
  // note: pair has fields: only its first holds &s
  r += *pair->second; // expect: uninit heap@uninit_51_allocating_functions.c:108.second, uninit r
  r += *pair->first; // expect: uninit s, uninit heap@uninit_51_allocating_functions.c:108.first, uninit r
  int q;
  int t = 5;
  // note: allocated as a header and read as a point, as Lua reads a GCObject as a Table: an object with a point's fields
  struct header *o = new_object(2, sizeof(struct point));
  struct point *at = (struct point *)o;
  at->x = &q;
  at->y = &t;
  r += *at->y; // expect: uninit heap@uninit_51_allocating_functions.c:117.y, uninit r
  r += *at->x; // expect: uninit q, uninit heap@uninit_51_allocating_functions.c:117.x, uninit r
  int v;
  // note: its result is not used, but push keeps what it allocates: the call is still an object
  push(&v, sizeof(struct node));
  printf("%d %d %d\n", r, made, *list->value); // expect: uninit r, uninit v, uninit heap@uninit_51_allocating_functions.c:125
  return 0;
}
