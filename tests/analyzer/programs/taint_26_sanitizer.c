// analysis: taint
// sanitizers (taint.toml): sanitize's result is clean and the buffer it is given is cleaned
#include <stdio.h>
#include <stdlib.h>

char *sanitize(char *s);

int main(void) {
  char *raw = getenv("CMD");
  char *safe = sanitize(raw);
  system(safe);
  // note: raw itself still holds getenv's tainted pointer
  system(raw); // expect: taint system
  char line[128];
  if (!fgets(line, sizeof line, stdin))
    return 1;
  sanitize(line);
  // note: line is one location, so sanitize cleans it (strong update)
  system(line);
  return 0;
}
