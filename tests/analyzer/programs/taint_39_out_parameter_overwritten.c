// analysis: taint
// a callee that overwrites a field through its pointer parameter before reading it cleans the caller's tainted field, one that may not does not
#include <stdlib.h>

struct request {
  int size;
};

static void make_safe(struct request *r) { r->size = 16; }

static void maybe_safe(struct request *r, int really) {
  if (really)
    r->size = 16;
}

int main(int argc, char **argv) {
  struct request first;
  struct request second;
  struct request third;
  first.size = atoi(getenv("FIRST"));
  second.size = atoi(getenv("SECOND"));
  third.size = atoi(getenv("THIRD"));
  make_safe(&first);
  make_safe(&second);
  maybe_safe(&third, argc > 1);
  free(malloc(first.size));
  free(malloc(second.size));
  free(malloc(third.size)); // expect: taint malloc
  (void)argv;
  return 0;
}
