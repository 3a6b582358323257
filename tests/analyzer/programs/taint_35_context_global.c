// analysis: taint
// one function reads a global before and after another function taints it: only the second result is tainted
#include <stdlib.h>

static int g_limit = 64;

static int current_limit(void) {
  return g_limit;
}

static void override_limit(void) {
  g_limit = atoi(getenv("LIMIT"));
}

int main(void) {
  int before = current_limit();
  override_limit();
  int after = current_limit();
  char *a = malloc(before);
  char *b = malloc(after); // expect: taint malloc
  free(a);
  free(b);
  return 0;
}
