// analysis: uninit
// a value carried around a loop is read in a later iteration before the first iteration writes it; a body-local written before use is fine
#include <stdio.h>

int main(int argc, char **argv) {
  int prev;
  for (int i = 0; i < argc; i++) {
    if (i > 0)
      printf("%d\n", prev); // expect: uninit prev
    prev = i;
  }
  int acc = 0;
  int j = 0;
  while (j < argc) {
    int tmp;
    tmp = j * 2;
    acc += tmp;
    j++;
  }
  printf("%d\n", acc);
  (void)argv;
  return 0;
}
