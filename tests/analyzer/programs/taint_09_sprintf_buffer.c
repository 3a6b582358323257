// analysis: taint
// sprintf and snprintf carry taint from any argument into the buffer; a constant format is no format-string finding
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char cmd[128];
  const char *user = getenv("USER");
  sprintf(cmd, "finger %s", user);
  system(cmd); // expect: taint system
  char cmd2[128];
  snprintf(cmd2, sizeof cmd2, "id %s", user);
  system(cmd2); // expect: taint system
  char cmd3[128];
  snprintf(cmd3, sizeof cmd3, "id %d", 42);
  system(cmd3);
  return 0;
}
