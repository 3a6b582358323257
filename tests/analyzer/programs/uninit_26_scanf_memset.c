// analysis: uninit
// external functions given a pointer initialize what it points to (scanf("%d", &x), memset, the buffer sprintf formats into); read-only ones (printf) do not
#include <stdio.h>
#include <string.h>

int main(void) {
  int n;
  if (scanf("%d", &n) != 1)
    return 1;
  printf("%d\n", n);
  int m;
  memset(&m, 0, sizeof m);
  printf("%d\n", m);
  int k;
  printf("%p\n", (void *)&k);
  // note: printf only reads what it is given, so k stays uninitialized
  printf("%d\n", k); // expect: uninit k
  char text[16];
  snprintf(text, sizeof text, "%d", m);
  printf("%c\n", text[0]);
  char other[16];
  printf("%c\n", other[0]); // expect: uninit other
  return 0;
}
