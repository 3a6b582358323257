// analysis: taint
// a local overwritten with a constant is clean (strong update); a conditional overwrite is not enough; pointers are limited by flow-insensitive points-to
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int n = atoi(getenv("N"));
  n = 16;
  char *a = malloc(n);
  int m = atoi(getenv("M"));
  if (argc > 1)
    m = 16;
  char *b = malloc(m); // expect: taint malloc
  char line[64];
  if (!fgets(line, sizeof line, stdin))
    return 1;
  char *p = line;
  p = "ls";
  // note: over-approximation: points-to is flow-insensitive, so p may still point to the tainted line
  system(p); // expect: taint system
  free(a);
  free(b);
  (void)argv;
  return 0;
}
