// analysis: uninit
// a call cannot reach a local of its caller whose address the caller has not given out on any path to it; once it may have (stored, passed along, in an earlier turn of a loop), every later call may
#include <stdio.h>

int *kept;
int *kept_in_loop;

static void peek_early(void) { printf("%d\n", *kept); }

static void peek_late(void) { printf("%d\n", *kept); } // expect: uninit late

static void peek_in_loop(void) { printf("%d\n", *kept_in_loop); } // expect: uninit looped

int main(int argc, char **argv) {
  int late;
  peek_early();
  kept = &late;
  peek_late();
  int looped;
  for (int i = 0; i < argc; ++i) {
    peek_in_loop();
    kept_in_loop = &looped;
  }
  (void)argv;
  return 0;
}
