// analysis: taint
// a struct returned in registers keeps the pointer it holds: what a callee reads into the buffer it points to is the caller's buffer
#include <stdio.h>
#include <stdlib.h>

struct span {
  char *at;
  long length;
};

static struct span wrap(char *at) {
  struct span s = {at, 0};
  return s;
}

static void input(char *at) {
  if (fgets(at, 64, stdin) == NULL) at[0] = 0;
}

int main(void) {
  char buffer[64] = "true";
  struct span s = wrap(buffer);
  input(s.at);
  system(buffer); // expect: taint system
  return 0;
}
