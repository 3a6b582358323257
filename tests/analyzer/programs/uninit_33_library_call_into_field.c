// analysis: uninit
// a library call given a pointer into one field of a struct initializes that field only
#include <stdio.h>

struct record {
  char line[64];
  int count;
};

int main(void) {
  struct record r;
  if (fgets(r.line, sizeof r.line, stdin) == NULL) return 1;
  printf("%s", r.line);
  printf("%d\n", r.count); // expect: uninit r.count
  return 0;
}
