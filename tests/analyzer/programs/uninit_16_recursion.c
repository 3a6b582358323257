// analysis: uninit
// recursion: a recursive writer that writes on every path initializes, one that may stop without writing does not; a function's own locals do not flow through a call to itself
#include <stdio.h>

static void fill(int *p, int n) {
  if (n == 0) {
    *p = 42;
    return;
  }
  fill(p, n - 1);
}

static void maybe_fill(int *p, int n) {
  if (n > 10)
    *p = 1;
  else if (n > 0)
    maybe_fill(p, n - 1);
}

static int depth(int n) {
  int local;
  if (n <= 0)
    return 0;
  local = n;
  int below = depth(n - 1);
  // note: the inner call leaves its own local uninitialized on its early return; that must not come back to this frame's local
  return local + below;
}

int main(int argc, char **argv) {
  int x;
  fill(&x, 3);
  printf("%d\n", x);
  int y;
  maybe_fill(&y, argc);
  printf("%d\n", y); // expect: uninit y
  printf("%d\n", depth(argc));
  (void)argv;
  return 0;
}
