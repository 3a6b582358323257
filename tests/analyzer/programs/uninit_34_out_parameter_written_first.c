// analysis: uninit
// a call initializes what its callee writes through a pointer parameter on every path before anything in it may read those bytes
#include <stdio.h>
#include <string.h>

struct pair {
  int a;
  int b;
};

int *watched;

static void set_a(struct pair *p) { p->a = 1; }

static void set_both(struct pair *p) {
  set_a(p); // through a callee
  p->b = 2;
}

static void clear(struct pair *p) { memset(p, 0, sizeof *p); }

static void increment(int *p) { *p = *p + 1; } // expect: uninit i

static void peek_then_set(int *p) {
  printf("%d\n", *watched); // expect: uninit w
  *p = 0;
}

static void set_in_loop(int *p, int n) {
  for (int k = 0; k < n; ++k)
    *p = k;
}

static void set_element(int *p) { *p = 5; }

int main(int argc, char **argv) {
  struct pair one;
  set_a(&one);
  printf("%d\n", one.a);
  printf("%d\n", one.b); // expect: uninit one.b
  struct pair two;
  set_both(&two);
  printf("%d %d\n", two.a, two.b);
  struct pair three;
  clear(&three);
  printf("%d %d\n", three.a, three.b);
  int i;
  increment(&i);
  printf("%d\n", i); // expect: uninit i
  int w;
  watched = &w;
  peek_then_set(&w);
  printf("%d\n", w);
  int l;
  set_in_loop(&l, argc);
  printf("%d\n", l); // expect: uninit l
  int row[4];
  set_element(&row[1]);
  printf("%d\n", row[0]); // expect: uninit row
  set_element(&i);
  set_element(&w);
  (void)argv;
  return 0;
}
