// analysis: taint
// structs are field-sensitive: a tainted field does not taint its neighbours
#include <stdlib.h>

struct request {
  char *command;
  int length;
  int flags;
};

int main(void) {
  struct request r;
  r.command = "ls";
  r.length = atoi(getenv("LENGTH"));
  r.flags = 0;
  system(r.command);
  char *buf = malloc(r.length); // expect: taint malloc
  char *buf2 = malloc(r.flags + 16);
  free(buf);
  free(buf2);
  return 0;
}
