// analysis: taint
// nested structs: two inner structs of the same type keep their taint apart
#include <stdlib.h>

struct inner {
  int size;
  char *path;
};

struct outer {
  int id;
  struct inner in;
  struct inner spare;
};

int main(void) {
  struct outer o;
  o.id = 1;
  o.in.path = getenv("IN_PATH");
  o.in.size = 4;
  o.spare.path = "/tmp";
  o.spare.size = atoi(getenv("SPARE_SIZE"));
  system(o.in.path); // expect: taint system
  system(o.spare.path);
  char *a = malloc(o.in.size);
  char *b = malloc(o.spare.size); // expect: taint malloc
  free(a);
  free(b);
  return o.id;
}
