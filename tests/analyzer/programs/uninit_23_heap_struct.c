// analysis: uninit
// heap structs: a malloc'd struct's fields are initialized by the stores into it through the variable it was kept in, a calloc'd one is initialized whole
#include <stdio.h>
#include <stdlib.h>

struct node {
  int value;
  int weight;
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
  printf("%d\n", b->value);
  printf("%d\n", b->weight); // expect: uninit heap@uninit_23_heap_struct.c:14.weight
  printf("%d\n", b->next->value);
  free(b);
  free(a);
  return 0;
}
