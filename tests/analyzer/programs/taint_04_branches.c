// analysis: taint
// if/else and switch: taint on any branch reaches the sink (path-insensitive)
#include <stdlib.h>

int main(int argc, char **argv) {
  int size;
  if (argc > 1)
    size = atoi(getenv("SIZE"));
  else
    size = 64;
  char *a = malloc(size); // expect: taint malloc
  int len;
  switch (argc) {
  case 1:
    len = 8;
    break;
  case 2:
    len = atoi(getenv("LEN"));
    break;
  default:
    len = 32;
  }
  char *b = malloc(len); // expect: taint malloc
  int fixed;
  if (argc > 3)
    fixed = 1;
  else
    fixed = atoi(argv[0]);
  char *c = malloc(fixed);
  free(a);
  free(b);
  free(c);
  return 0;
}
