// analysis: taint
// the scanf family taints every pointer argument after the format
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char name[32];
  int count;
  if (scanf("%31s %d", name, &count) != 2)
    return 1;
  system(name); // expect: taint system
  char *a = malloc(count); // expect: taint malloc
  int extra = 0;
  if (fscanf(stdin, "%d", &extra) != 1)
    return 1;
  char *b = malloc(extra); // expect: taint malloc
  int fixed = 12;
  char *c = malloc(fixed);
  free(a);
  free(b);
  free(c);
  return 0;
}
