// analysis: taint
// a library call given a pointer into one field of a struct taints that field only
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct record {
  char line[64];
  char fixed[16];
};

int main(void) {
  struct record r;
  strcpy(r.fixed, "true");
  if (fgets(r.line, sizeof r.line, stdin) == NULL) return 1;
  system(r.fixed);
  system(r.line); // expect: taint system
  return 0;
}
