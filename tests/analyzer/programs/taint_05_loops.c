// analysis: taint
// loops: characters read by getchar in a while loop taint the array they are stored into; a for loop of constants does not
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char cmd[64];
  int i = 0;
  int c;
  while ((c = getchar()) != EOF && i < 63) {
    cmd[i] = (char)c;
    i++;
  }
  cmd[i] = '\0';
  system(cmd); // expect: taint system
  char safe[8];
  for (int j = 0; j < 7; j++)
    safe[j] = 'a';
  safe[7] = '\0';
  system(safe);
  return 0;
}
