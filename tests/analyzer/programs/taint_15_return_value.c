// analysis: taint
// taint returned from a function, directly and through a local, reaches the caller's sink
#include <stdio.h>
#include <stdlib.h>

static char *get_command(void) {
  return getenv("COMMAND");
}

static int get_size(void) {
  int s = atoi(getenv("SIZE"));
  return s;
}

static int default_size(void) {
  return 128;
}

int main(void) {
  system(get_command()); // expect: taint system
  char *a = malloc(get_size()); // expect: taint malloc
  char *b = malloc(default_size());
  free(a);
  free(b);
  return 0;
}
