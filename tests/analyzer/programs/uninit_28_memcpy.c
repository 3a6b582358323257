// analysis: uninit
// memcpy copies the source's state to the destination; the copy itself is not a load
#include <stdio.h>
#include <string.h>

int main(void) {
  int a;
  int b;
  memcpy(&b, &a, sizeof a);
  printf("%d\n", b); // expect: uninit b
  int c = 7;
  int d;
  memcpy(&d, &c, sizeof c);
  printf("%d\n", d);
  return 0;
}
