// analysis: taint
// format-string sinks of sprintf (argument 2) and snprintf (argument 3)
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char *fmt = getenv("FMT");
  char out[64];
  sprintf(out, fmt); // expect: taint sprintf
  snprintf(out, sizeof out, fmt); // expect: taint snprintf
  snprintf(out, sizeof out, "%s", fmt);
  puts(out);
  return 0;
}
