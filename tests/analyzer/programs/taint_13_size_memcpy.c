// analysis: taint
// size sinks: the length argument of memcpy, memmove, strncpy, strncat and memset
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  char src[256] = "payload";
  char dst[256];
  int n = atoi(getenv("LEN"));
  memcpy(dst, src, n); // expect: taint memcpy
  memmove(dst, src, n); // expect: taint memmove
  strncpy(dst, src, n); // expect: taint strncpy
  strncat(dst, src, n); // expect: taint strncat
  memset(dst, 0, n); // expect: taint memset
  memcpy(dst, src, sizeof dst);
  puts(dst);
  return 0;
}
