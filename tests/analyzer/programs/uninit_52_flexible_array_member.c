// analysis: uninit
// flexible array members: memory of a size known only at run time, kept and read as a struct that ends in an array, has that struct's fields, its array running to the object's end
#include <stdio.h>
#include <stdlib.h>

struct message {
  int length;
  int kind;
  char text[];
};

// The older way of writing one: an array of one element, allocated longer.
struct counts {
  long total;
  long flags;
  long values[1];
};

int main(int argc, char **argv) {
  size_t n = (size_t)argc + 8;
  struct message *m = malloc(sizeof *m + n);
  if (m == NULL)
    return 1;
  m->length = (int)n;
  for (size_t i = 0; i < n; ++i)
    m->text[i] = 'x';
  // note: each field is a location of its own: writing the length leaves the kind without a value
  printf("%d %d\n", m->length, m->kind); // expect: uninit heap@uninit_52_flexible_array_member.c:21.kind
  // note: the array is one location, which the loop wrote without replacing it
  printf("%c\n", m->text[n - 1]); // expect: uninit heap@uninit_52_flexible_array_member.c:21.text
  struct counts *c = malloc(sizeof *c + (size_t)argc * sizeof(long));
  if (c == NULL)
    return 1;
  c->total = argc;
  c->flags = 0;
  // note: past its one declared element, the array runs on to the object's end, and the fields before it keep their values
  c->values[argc] = 1;
  printf("%ld %ld\n", c->total, c->flags);
  printf("%ld\n", c->values[0]); // expect: uninit heap@uninit_52_flexible_array_member.c:31.values
  free(c);
  free(m);
  return 0;
}
