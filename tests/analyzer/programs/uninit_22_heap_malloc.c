// analysis: uninit
// malloc's memory is uninitialized and, being a heap location, never strongly updated; calloc's memory is initialized
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
  // note: over-approximation: stores into a heap location are weak, so it stays possibly uninitialized
  printf("%d\n", *p); // expect: uninit heap@uninit_22_heap_malloc.c:7
  *q = 1;
  printf("%d\n", *q);
  free(p);
  free(q);
  return 0;
}
