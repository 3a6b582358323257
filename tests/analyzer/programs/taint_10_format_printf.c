// analysis: taint
// format-string sinks: a tainted format for printf and fprintf; tainted data as a %s argument is not a finding
#include <stdio.h>

int main(void) {
  char buf[100];
  if (!fgets(buf, sizeof buf, stdin))
    return 1;
  printf("%s", buf);
  printf(buf); // expect: taint printf
  fprintf(stderr, "%s\n", buf);
  fprintf(stderr, buf); // expect: taint fprintf
  puts(buf);
  return 0;
}
