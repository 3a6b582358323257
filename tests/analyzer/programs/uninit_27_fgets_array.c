// analysis: uninit
// fgets and memset initialize the whole buffer they are given; handing an uninitialized buffer to a read-only external is not a load
#include <stdio.h>
#include <string.h>

int main(void) {
  char line[64];
  if (!fgets(line, sizeof line, stdin))
    return 1;
  printf("%c\n", line[0]);
  char scratch[16];
  // note: strlen and puts read scratch, but only a load is a finding
  printf("%zu\n", strlen(scratch));
  puts(scratch);
  printf("%c\n", scratch[0]); // expect: uninit scratch
  char zeroed[8];
  memset(zeroed, 0, sizeof zeroed);
  printf("%c\n", zeroed[3]);
  return 0;
}
