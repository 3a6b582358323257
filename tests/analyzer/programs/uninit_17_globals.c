// analysis: uninit
// globals are initialized (C zeroes them); storing an uninitialized value into a global makes it possibly uninitialized
#include <stdio.h>

int counter;
int sticky;
static int table_size = 8;

static void spoil(void) {
  int junk;
  sticky = junk; // expect: uninit junk
}

int main(void) {
  counter++;
  printf("%d %d\n", counter, table_size);
  printf("%d\n", sticky);
  spoil();
  printf("%d\n", sticky); // expect: uninit sticky
  return 0;
}
