// analysis: taint
// indirect calls are resolved by type: every address-taken function of the call's type is a possible target
#include <stdlib.h>

static int from_env(void) { return atoi(getenv("N")); }
static int constant(void) { return 16; }
static size_t small(int k) { return 8 * (size_t)k; }
static size_t large(int k) { return 4096 + (size_t)k; }

int (*int_sources[])(void) = {from_env};

int main(int argc, char **argv) {
  int (*get)(void) = constant;
  // note: over-approximation by type: from_env has the type int(void) and its address is taken, so get() may call it
  char *a = malloc(get()); // expect: taint malloc
  size_t (*sz)(int) = argc > 1 ? small : large;
  char *b = malloc(sz(2));
  free(a);
  free(b);
  (void)argv;
  return 0;
}
