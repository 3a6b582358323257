// analysis: taint
// a pointer stepped through a buffer in a loop (its offset grows every time round) still points into the buffer
#include <stdio.h>
#include <stdlib.h>

struct line {
  char text[64];
  char *cursor;
};

static char *skip_blanks(char *p) {
  while (*p == ' ' || *p == '\t')
    ++p;
  return p;
}

int main(void) {
  struct line in;
  if (fgets(in.text, sizeof in.text, stdin) == NULL)
    return 1;
  in.cursor = in.text;
  while (*in.cursor != '\0' && *in.cursor != '\n')
    in.cursor += 2;
  system(skip_blanks(in.text)); // expect: taint system
  char safe[16] = "ls -l";
  char *q = safe;
  for (int i = 0; i < 3; ++i)
    q++;
  system(q);
  return 0;
}
