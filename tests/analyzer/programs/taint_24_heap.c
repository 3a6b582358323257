// analysis: taint
// heap objects: a copy through the variable an allocation was kept in replaces the site's last object; an object read through any other pointer keeps its taint; strdup copies taint
#include <stdlib.h>
#include <string.h>

int main(void) {
  char *buf = malloc(64);
  char *other = malloc(64);
  if (!buf || !other)
    return 1;
  strcpy(buf, getenv("CMD"));
  system(buf); // expect: taint system
  strcpy(buf, "ls");
  system(buf);
  char *alias = buf;
  strcpy(alias, getenv("CMD"));
  strcpy(alias, "ls");
  // note: over-approximation: alias is not the variable the allocation was kept in, so its copies add to the object and never replace it
  system(buf); // expect: taint system
  strcpy(other, "date");
  system(other);
  char *dup = strdup(getenv("DUP"));
  system(dup); // expect: taint system
  free(dup);
  free(other);
  free(buf);
  return 0;
}
