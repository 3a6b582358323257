// analysis: taint
// size sinks: malloc's size computed from tainted numbers (atoi, strlen of tainted strings)
#include <stdlib.h>
#include <string.h>

int main(void) {
  int n = atoi(getenv("COUNT"));
  char *a = malloc(n); // expect: taint malloc
  char *b = malloc(n * sizeof(int) + 1); // expect: taint malloc
  size_t len = strlen(getenv("NAME"));
  char *c = malloc(len + 1); // expect: taint malloc
  char *d = malloc(64);
  free(a);
  free(b);
  free(c);
  free(d);
  return 0;
}
