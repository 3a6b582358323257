// analysis: taint
// do-while with break and continue: taint accumulated inside the loop reaches the sink after it
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int total = 0;
  int k = 0;
  do {
    k++;
    if (k == 2)
      continue;
    if (k > 5)
      break;
    total += getchar();
  } while (k < argc);
  char *p = malloc(total); // expect: taint malloc
  int count = 0;
  for (int i = 0; i < argc; i++) {
    if (i == 3)
      break;
    count += i;
  }
  char *q = malloc(count);
  free(p);
  free(q);
  (void)argv;
  return 0;
}
