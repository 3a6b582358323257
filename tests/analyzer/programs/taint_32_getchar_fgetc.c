// analysis: taint
// fgetc, getc and getchar: their result is tainted
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int a = getchar();
  int b = fgetc(stdin);
  int c = getc(stdin);
  char *pa = malloc(a); // expect: taint malloc
  char *pb = malloc(b); // expect: taint malloc
  char *pc = malloc(c + 1); // expect: taint malloc
  char *pd = malloc(sizeof(int));
  free(pa);
  free(pb);
  free(pc);
  free(pd);
  return 0;
}
