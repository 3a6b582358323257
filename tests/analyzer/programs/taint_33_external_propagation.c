// analysis: taint
// external functions outside the configuration: the result is tainted when an argument is, or points to tainted memory
#include <stdlib.h>
#include <string.h>

int main(void) {
  char *path = getenv("PATH");
  char *colon = strchr(path, ':');
  if (colon)
    system(colon); // expect: taint system
  long v = strtol(getenv("V"), NULL, 10);
  char *a = malloc(v); // expect: taint malloc
  size_t clean = strlen("abc");
  char *b = malloc(clean);
  int cmp = strcmp(path, "x");
  char *c = malloc(cmp + 8); // expect: taint malloc
  free(a);
  free(b);
  free(c);
  return 0;
}
