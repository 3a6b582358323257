// analysis: uninit
// do-while: the body runs at least once, so a write in it initializes; a write skipped by continue does not
#include <stdio.h>

int main(int argc, char **argv) {
  int x;
  int n = argc;
  do {
    x = n;
    n--;
  } while (n > 0);
  printf("%d\n", x);
  int y;
  int k = 0;
  do {
    k++;
    if (k == 1)
      continue;
    y = k;
  } while (k < 3);
  printf("%d\n", y); // expect: uninit y
  (void)argv;
  return 0;
}
