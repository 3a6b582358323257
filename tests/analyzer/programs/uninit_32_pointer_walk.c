// analysis: uninit
// a pointer stepped through an array in a loop (its offset grows every time round) still points into it
#include <stdio.h>

struct pair {
  int first;
  int second;
};

int main(int argc, char **argv) {
  int values[8];
  for (int *p = values; p < values + 4; ++p)
    *p = 0;
  // note: values is one location and the stores through p are weak updates
  printf("%d\n", values[0]); // expect: uninit values
  struct pair pairs[2];
  struct pair *walk = pairs;
  while (walk < pairs + 2) {
    walk->first = argc;
    walk++;
  }
  printf("%d\n", pairs[1].first); // expect: uninit pairs
  int done = 1;
  int *d = &done;
  for (int i = 0; i < argc; ++i)
    d += 0;
  printf("%d\n", *d);
  (void)argv;
  return 0;
}
