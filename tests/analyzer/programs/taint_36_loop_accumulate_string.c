// analysis: taint
// a loop appending tainted arguments to a command with strcat; a loop of constants builds a clean one
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  char cmd[512];
  strcpy(cmd, "tar czf out.tgz");
  const char *names[2];
  names[0] = getenv("FILE1");
  names[1] = getenv("FILE2");
  for (int i = 0; i < 2; i++) {
    strcat(cmd, " ");
    strcat(cmd, names[i]);
  }
  system(cmd); // expect: taint system
  char safe[64];
  strcpy(safe, "ls");
  int k = 0;
  while (k < argc) {
    strcat(safe, " -l");
    k++;
  }
  system(safe);
  (void)argv;
  return 0;
}
