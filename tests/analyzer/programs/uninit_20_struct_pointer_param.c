// analysis: uninit
// a struct filled through a pointer parameter: only the fields the callee writes become initialized
#include <stdio.h>

struct config {
  int verbose;
  int level;
  int limit;
};

static void defaults(struct config *c) {
  c->verbose = 0;
  c->level = 1;
}

static int read_limit(const struct config *c) {
  return c->limit; // expect: uninit cfg.limit
}

int main(void) {
  struct config cfg;
  defaults(&cfg);
  printf("%d %d\n", cfg.verbose, cfg.level);
  printf("%d\n", read_limit(&cfg));
  cfg.limit = 10;
  printf("%d\n", cfg.limit);
  return 0;
}
