// analysis: uninit
// straight-line code: a load of a never-written local is a finding, loads of written locals are not
#include <stdio.h>

int main(void) {
  int x;
  int y = 2;
  int z = y + 1;
  printf("%d\n", z);
  printf("%d\n", x); // expect: uninit x
  x = 5;
  printf("%d\n", x + y);
  return 0;
}
