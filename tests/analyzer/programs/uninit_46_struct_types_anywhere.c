// analysis: uninit
// a pointer moved by a variable offset may point anywhere in its object, but a field read through it reaches only objects that may hold a struct of its type: one that contains one, or a union it fits in
#include <stddef.h>
#include <stdio.h>

struct counter {
  int count;
  int limit;
};

struct holder {
  long id;
  struct counter counter;
};

struct label {
  long width;
  const char *text;
};

union small {
  int number;
  short pair[2];
};

static void *at(void *base, size_t offset) {
  return (char *)base + offset;
}

int main(int argc, char **argv) {
  struct holder h;
  struct label l;
  union small u;
  h.id = 1;
  h.counter.count = 2;
  h.counter.limit = 3;
  l.text = "x";
  struct counter *c = at(&h, offsetof(struct holder, counter));
  const char **text = at(&l, offsetof(struct label, text));
  printf("%d %d\n", c->count, c->limit);
  // note: `at` gives both of its callers both objects, at an unknown offset: *text reads all of both
  printf("%s\n", *text); // expect: uninit l.width
  void *either = argc > 1 ? (void *)&u : (void *)&h;
  struct holder *big = either;
  printf("%ld %s\n", big->id, argv[0]);
  return 0;
}
