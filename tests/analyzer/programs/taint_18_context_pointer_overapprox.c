// analysis: taint
// where context sensitivity ends: a pointer parameter's points-to set is context-insensitive, so a clean call may read the tainted buffer
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
  // note: over-approximation: s may point to line in both calls (Andersen), and strlen's result is tainted when its argument points to tainted memory
  char *q = malloc(b); // expect: taint malloc
  free(p);
  free(q);
  return 0;
}
