// analysis: uninit
// storage declared as words may hold any struct, and an address rounded up by arithmetic on integers still points into its buffer
#include <stdint.h>
#include <stdio.h>

struct node {
  int *value;
  int count;
};

static long pool[8];

int main(void) {
  int x;
  char raw[64];
  struct node *n = (struct node *)pool;
  n->value = &x;
  printf("%d\n", *n->value); // expect: uninit x
  char *aligned = (char *)(((uintptr_t)raw + 15) / 16 * 16);
  printf("%c\n", aligned[0]); // expect: uninit raw
  return 0;
}
