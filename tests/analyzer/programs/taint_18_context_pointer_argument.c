// analysis: taint
// a pointer parameter may point to the tainted buffer in any call (Andersen), but a local buffer is read only by a call it is passed to: the clean call reads nothing tainted
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t length_of(const char *s) {
  return strlen(s);
}

int main(void) {
  char line[64];
  if (!fgets(line, sizeof line, stdin))
    return 1;
  size_t a = length_of(line);
  size_t b = length_of("constant");
  char *p = malloc(a); // expect: taint malloc
  char *q = malloc(b);
  free(p);
  free(q);
  return 0;
}
