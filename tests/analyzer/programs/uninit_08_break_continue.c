// analysis: uninit
// loops with break and continue: a write before a break, a write skipped by continue, an infinite loop left only after a write
#include <stdio.h>

int main(int argc, char **argv) {
  int found;
  for (int i = 0; i < 10; i++) {
    if (i == argc) {
      found = i;
      break;
    }
  }
  printf("%d\n", found); // expect: uninit found
  int always;
  for (;;) {
    always = argc;
    if (always > 0)
      break;
  }
  printf("%d\n", always);
  int odd;
  for (int j = 0; j < argc; j++) {
    if (j % 2 == 0)
      continue;
    odd = j;
  }
  printf("%d\n", odd); // expect: uninit odd
  (void)argv;
  return 0;
}
