// analysis: taint
// read, recv and fread fill their buffer with tainted data
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
  char buf[128];
  if (read(0, buf, sizeof buf - 1) <= 0)
    return 1;
  buf[127] = '\0';
  system(buf); // expect: taint system
  char net[128];
  if (recv(3, net, sizeof net - 1, 0) <= 0)
    return 1;
  net[127] = '\0';
  FILE *p = popen(net, "r"); // expect: taint popen
  char blob[64];
  if (fread(blob, 1, sizeof blob - 1, stdin) == 0)
    return 1;
  blob[63] = '\0';
  system(blob); // expect: taint system
  char local[4];
  local[0] = 'l';
  local[1] = 's';
  local[2] = '\0';
  system(local);
  if (p)
    pclose(p);
  return 0;
}
