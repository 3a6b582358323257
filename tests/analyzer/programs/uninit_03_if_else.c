// analysis: uninit
// if/else: a variable written on both branches is initialized, one written on a single branch is not
#include <stdio.h>

int main(int argc, char **argv) {
  int both;
  int one;
  if (argc > 1) {
    both = 1;
    one = 1;
  } else {
    both = 2;
  }
  printf("%d\n", both);
  printf("%d\n", one); // expect: uninit one
  int guarded;
  if (argc > 2)
    guarded = 3;
  // note: path-insensitive: the two conditions are the same, but that is not seen
  if (argc > 2)
    printf("%d\n", guarded); // expect: uninit guarded
  int never;
  if (argc > 1000 && argc < 0)
    never = 7;
  else
    never = 8;
  printf("%d\n", never);
  (void)argv;
  return 0;
}
