// analysis: uninit
// a pointer copied a byte at a time still points where it did
#include <stdio.h>

static void copy_bytes(char *to, const char *from, unsigned n) {
  for (unsigned i = 0; i < n; i++) to[i] = from[i];
}

int main(void) {
  int y;
  int *p = &y;
  int *q = NULL;
  copy_bytes((char *)&q, (const char *)&p, sizeof p);
  printf("%d\n", *q); // expect: uninit y
  return 0;
}
