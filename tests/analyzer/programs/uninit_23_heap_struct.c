// analysis: uninit
// heap structs: a malloc'd struct stays possibly uninitialized after field stores, a calloc'd one is initialized
#include <stdio.h>
#include <stdlib.h>

struct node {
  int value;
  struct node *next;
};

int main(void) {
  struct node *a = calloc(1, sizeof *a);
  struct node *b = malloc(sizeof *b);
  if (!a || !b)
    return 1;
  b->value = 3;
  b->next = a;
  printf("%d\n", a->value);
  // note: over-approximation: heap stores are weak, so b's object is still possibly uninitialized
  printf("%d\n", b->value); // expect: uninit heap@uninit_23_heap_struct.c:13
  // note: b->next is loaded from the malloc'd object (a finding); ->value then reads the calloc'd one (none)
  printf("%d\n", b->next->value); // expect: uninit heap@uninit_23_heap_struct.c:13
  free(b);
  free(a);
  return 0;
}
