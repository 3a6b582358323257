// analysis: uninit
// structs are field-sensitive: each field is its own location
#include <stdio.h>

struct point {
  int x;
  int y;
  int z;
};

int main(void) {
  struct point p;
  p.x = 1;
  p.z = 3;
  printf("%d\n", p.x);
  printf("%d\n", p.y); // expect: uninit p.y
  printf("%d\n", p.x + p.z);
  p.y = p.x;
  printf("%d\n", p.y);
  struct point q;
  q.x = p.y;
  printf("%d %d\n", q.x, q.z); // expect: uninit q.z
  return 0;
}
