// analysis: taint
// context sensitivity two calls deep: a shared helper reached from a tainted and from a clean wrapper
#include <stdio.h>
#include <stdlib.h>

static int scale(int v, int k) {
  return v * k;
}

static int tainted_size(void) {
  return scale(getchar(), 4);
}

static int clean_size(void) {
  return scale(16, 4);
}

int main(void) {
  int c = clean_size();
  int t = tainted_size();
  char *a = malloc(c);
  char *b = malloc(t); // expect: taint malloc
  char *d = malloc(clean_size());
  free(a);
  free(b);
  free(d);
  return 0;
}
