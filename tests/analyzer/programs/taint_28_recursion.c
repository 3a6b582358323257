// analysis: taint
// recursion: taint passed down a recursive chain and returned up to the caller that supplied it, and only to it
#include <stdlib.h>

static int sum_down(int v, int n) {
  if (n == 0)
    return v;
  return sum_down(v + 1, n - 1);
}

int main(void) {
  int t = sum_down(atoi(getenv("N")), 3);
  int c = sum_down(5, 3);
  char *a = malloc(t); // expect: taint malloc
  char *b = malloc(c);
  free(a);
  free(b);
  return 0;
}
