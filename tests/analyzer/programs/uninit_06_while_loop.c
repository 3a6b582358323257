// analysis: uninit
// while loops: a write in the body may not happen (path-insensitive); a write before the loop does
#include <stdio.h>

int main(int argc, char **argv) {
  int i = 0;
  int x;
  while (i < 1) {
    x = i;
    i++;
  }
  // note: path-insensitive: the body runs once at run time, but the exit edge of the first test is taken too
  printf("%d\n", x); // expect: uninit x
  int y = argc;
  int n = argc;
  while (n > 0) {
    y = y + n;
    n--;
  }
  printf("%d\n", y);
  (void)argv;
  return 0;
}
