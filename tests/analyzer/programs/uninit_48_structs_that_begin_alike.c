// analysis: uninit
// memory declared as one struct may be read as another that begins with the same member, as sockaddr_storage is read as sockaddr_in: the fields written that way are that memory's
#include <stdio.h>

struct any_address {
  short family;
  char data[30];
};

struct owned_address {
  short family;
  short port;
  int *owner;
};

int main(void) {
  int x;
  struct any_address storage;
  struct owned_address *address = (struct owned_address *)&storage;
  address->family = 2;
  address->owner = &x;
  // note: data is an array, one location a store does not replace: its bytes under owner stay unset
  printf("%d\n", *address->owner); // expect: uninit x, uninit storage.data
  return 0;
}
