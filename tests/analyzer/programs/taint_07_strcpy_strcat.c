// analysis: taint
// strcpy and strcat copy taint into the destination buffer; popen is a sink
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  char cmd[256];
  strcpy(cmd, "echo ");
  strcat(cmd, getenv("MSG"));
  system(cmd); // expect: taint system
  char copy[256];
  strcpy(copy, cmd);
  FILE *f = popen(copy, "r"); // expect: taint popen
  char clean[32];
  strcpy(clean, "uptime");
  system(clean);
  if (f)
    pclose(f);
  return 0;
}
