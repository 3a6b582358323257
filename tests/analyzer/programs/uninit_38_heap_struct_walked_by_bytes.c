// analysis: uninit
// a malloc'd struct that some pointer may point into at an unknown offset (walked byte by byte) is one location again: its fields are not told apart, and nothing replaces one
#include <stdio.h>
#include <stdlib.h>

struct pair {
  int a;
  int b;
};

int main(int argc, char **argv) {
  struct pair *p = malloc(sizeof *p);
  if (p == NULL)
    return 1;
  unsigned char *byte = (unsigned char *)p;
  byte += argc;
  *byte = 0;
  p->a = 1;
  // note: over-approximation: the store into a does not replace anything of the one location
  printf("%d\n", p->a); // expect: uninit heap@uninit_38_heap_struct_walked_by_bytes.c:12
  struct pair *q = malloc(sizeof *q);
  if (q == NULL)
    return 1;
  q->a = 1;
  q->b = 2;
  printf("%d %d\n", q->a, q->b);
  (void)argv;
  return 0;
}
