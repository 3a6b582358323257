// analysis: taint
// heap objects: one location per allocation site, never strongly updated; strdup copies taint
#include <stdlib.h>
#include <string.h>

int main(void) {
  char *buf = malloc(64);
  char *other = malloc(64);
  if (!buf || !other)
    return 1;
  strcpy(buf, getenv("CMD"));
  system(buf); // expect: taint system
  strcpy(buf, "ls");
  // note: over-approximation: the heap object is never strongly updated, it stays tainted
  system(buf); // expect: taint system
  strcpy(other, "date");
  system(other);
  char *dup = strdup(getenv("DUP"));
  system(dup); // expect: taint system
  free(dup);
  free(other);
  free(buf);
  return 0;
}
