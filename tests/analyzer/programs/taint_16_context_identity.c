// analysis: taint
// unrealizable paths: an identity function called with tainted and with clean data; the clean result at a sink is no finding
#include <stdlib.h>

static int id(int v) {
  return v;
}

int main(void) {
  int tainted = id(atoi(getenv("N")));
  int clean = id(32);
  // note: IFDS returns id's tainted result only to the call it came from
  char *a = malloc(clean);
  char *b = malloc(tainted); // expect: taint malloc
  free(a);
  free(b);
  return 0;
}
