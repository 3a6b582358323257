// analysis: uninit
// pointers to locals: a load through the pointer reads the local; a store through a pointer to exactly one local is a strong update
#include <stdio.h>

int main(void) {
  int x;
  int *p = &x;
  printf("%d\n", *p); // expect: uninit x
  *p = 4;
  printf("%d\n", x);
  printf("%d\n", *p);
  int y;
  int *q = &y;
  int **qq = &q;
  **qq = 9;
  printf("%d\n", y);
  return 0;
}
