// analysis: taint
// globals carry taint between functions; a global overwritten with a constant is clean again (strong update)
#include <stdlib.h>

static int g_size;
static int g_limit = 10;

static void configure(void) {
  g_size = atoi(getenv("SIZE"));
}

static void reset(void) {
  g_size = 0;
}

int main(void) {
  char *a = malloc(g_size);
  configure();
  char *b = malloc(g_size); // expect: taint malloc
  char *c = malloc(g_limit);
  reset();
  char *d = malloc(g_size);
  free(a);
  free(b);
  free(c);
  free(d);
  return 0;
}
