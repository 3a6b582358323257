// analysis: taint
// out-parameters: a callee that stores tainted data through a pointer parameter taints the caller's variable or buffer
#include <stdio.h>
#include <stdlib.h>

static void read_size(int *out) {
  *out = atoi(getenv("SIZE"));
}

static void read_command(char *dst, int cap) {
  fgets(dst, cap, stdin);
}

int main(void) {
  int size = 0;
  read_size(&size);
  char *a = malloc(size); // expect: taint malloc
  char cmd[64];
  read_command(cmd, sizeof cmd);
  system(cmd); // expect: taint system
  int fixed = 8;
  char *b = malloc(fixed);
  free(a);
  free(b);
  return 0;
}
