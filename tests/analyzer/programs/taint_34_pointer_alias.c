// analysis: taint
// pointers to locals: tainted data stored through an alias taints the local it points to
#include <stdlib.h>

int main(void) {
  int size = 8;
  int *p = &size;
  *p = atoi(getenv("N"));
  char *a = malloc(size); // expect: taint malloc
  int other = 8;
  int *q = &other;
  *q = 16;
  char *b = malloc(other);
  char *cmd = "ls";
  char **pc = &cmd;
  *pc = getenv("CMD");
  system(cmd); // expect: taint system
  free(a);
  free(b);
  return 0;
}
