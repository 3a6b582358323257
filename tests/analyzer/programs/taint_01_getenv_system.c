// analysis: taint
// the simplest flow: getenv's result reaches system; a constant command does not
#include <stdlib.h>

int main(void) {
  char *cmd = getenv("CMD");
  system(cmd); // expect: taint system
  system("ls");
  return 0;
}
