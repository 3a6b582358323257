// analysis: uninit
// a callback's context is a pointer to any caller's struct, but each callback reads its own: a struct's field is read only in the objects that are structs of its type
#include <stdio.h>

struct counter {
  int count;
  int limit;
};

struct label {
  long width;
  const char *text;
};

static void run(void (*callback)(void *), void *context) {
  callback(context);
}

static void show_counter(void *context) {
  struct counter *c = context;
  printf("%d\n", c->count);
}

static void show_label(void *context) {
  struct label *l = context;
  printf("%ld\n", l->width); // expect: uninit l.width
}

int main(void) {
  struct counter c;
  struct label l;
  c.count = 1;
  l.text = "x";
  run(show_counter, &c);
  run(show_label, &l);
  printf("%d\n", c.limit); // expect: uninit c.limit
  return 0;
}
