// analysis: uninit
// one function called before and after a global is spoiled: only the second call's result is uninitialized
#include <stdio.h>

int g_val;

static int peek(void) {
  return g_val; // expect: uninit g_val
}

static void spoil(void) {
  int junk;
  g_val = junk; // expect: uninit junk
}

int main(void) {
  int before = peek();
  spoil();
  int after = peek();
  // note: before is clean: the first call's context has g_val initialized
  printf("%d\n", before);
  printf("%d\n", after); // expect: uninit after
  return 0;
}
