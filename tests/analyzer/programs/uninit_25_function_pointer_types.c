// analysis: uninit
// indirect call targets must match the call's type: address-taken functions with another parameter count or return type are not targets
#include <stdio.h>

static void init_one(int *p) { *p = 1; }
static void init_two(int *p) { *p = 2; }
static void skip_count(int *p, int n) { (void)p; (void)n; }
static int skip_ret(int *p) { (void)p; return 0; }

void (*count_handler)(int *, int) = skip_count;
int (*ret_handler)(int *) = skip_ret;

int main(int argc, char **argv) {
  void (*f)(int *) = init_one;
  if (argc > 1)
    f = init_two;
  int x;
  f(&x);
  // note: both targets of type void(int *) write *p, so x is initialized
  printf("%d\n", x);
  int y;
  count_handler(&y, 1);
  // note: only skip_count has type void(int *, int); init_one and init_two are not targets
  printf("%d\n", y); // expect: uninit y
  (void)argv;
  return 0;
}
