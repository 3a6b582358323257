// analysis: uninit
// an array inside a struct is one location of that struct, named by its field path
#include <stdio.h>

struct message {
  int length;
  char body[8];
};

int main(void) {
  struct message m;
  m.length = 2;
  m.body[0] = 'h';
  printf("%d\n", m.length);
  // note: over-approximation: m.body[0] = 'h' is a weak update of the one location m.body
  printf("%c\n", m.body[1]); // expect: uninit m.body
  return 0;
}
