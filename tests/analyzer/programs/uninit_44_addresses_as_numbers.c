// analysis: uninit
// a distance between two addresses, or a hash of one, is a number: copying it with a struct does not make the struct's pointers point where the addresses did (copied through a pointer to either of two structs, every field may take every field's value)
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct span {
  const char *at;
  long length;
  unsigned hash;
};

int main(int argc, char **argv) {
  char scratch[16];
  const char *text = "abcdef";
  struct span one, two, out;
  one.at = text;
  one.length = (scratch + sizeof scratch) - scratch;
  one.hash = (unsigned)(uintptr_t)scratch;
  two.at = text + 1;
  two.length = 5;
  // note: two.hash is never set; the copy through `pick` gives every field of out every field's value
  struct span *pick = argc > 1 ? &one : &two;
  memcpy(&out, pick, sizeof out);
  printf("%c %ld %u %s\n", out.at[0], out.length, out.hash, argv[0]); // expect: uninit out.at, uninit out.length, uninit out.hash
  return 0;
}
