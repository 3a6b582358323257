// analysis: uninit
// switch: every case and the default write (initialized) versus a switch without a default
#include <stdio.h>

int main(int argc, char **argv) {
  int full;
  switch (argc) {
  case 1:
    full = 10;
    break;
  case 2:
    full = 20;
    break;
  default:
    full = 30;
    break;
  }
  int partial;
  switch (argc) {
  case 1:
    partial = 1;
    break;
  case 2:
  case 3:
    partial = 2;
    break;
  }
  int fall;
  switch (argc) {
  case 1:
  default:
    fall = 5;
  }
  printf("%d %d\n", full, fall);
  printf("%d\n", partial); // expect: uninit partial
  (void)argv;
  return 0;
}
