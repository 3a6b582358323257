// analysis: uninit
// for loops: an accumulator never initialized, one initialized before the loop, a variable written only in the body
#include <stdio.h>

int main(int argc, char **argv) {
  int sum;
  int total = 0;
  int last;
  for (int i = 0; i < argc; i++) {
    sum += i; // expect: uninit sum
    total += i;
    last = i;
  }
  printf("%d\n", total);
  // note: the loop may run zero times
  printf("%d\n", last); // expect: uninit last
  (void)argv;
  return sum; // expect: uninit sum
}
