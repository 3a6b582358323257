// analysis: uninit
// malloc's memory is uninitialized; memory that is not one whole struct is one location, like an array, that a store adds to and never replaces; calloc's memory is initialized
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int *p = malloc(sizeof(int));
  int *q = calloc(1, sizeof(int));
  if (!p || !q)
    return 1;
  printf("%d\n", *q);
  printf("%d\n", *p); // expect: uninit heap@uninit_22_heap_malloc.c:7
  *p = 5;
  // note: over-approximation: a store of an int does not cover the object, one location of unknown size, so it stays possibly uninitialized
  printf("%d\n", *p); // expect: uninit heap@uninit_22_heap_malloc.c:7
  *q = 1;
  printf("%d\n", *q);
  free(p);
  free(q);
  return 0;
}
