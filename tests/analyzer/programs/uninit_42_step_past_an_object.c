// analysis: uninit
// a struct's fields stay apart where only imprecision reaches past them: an inbounds step past the end of an object of known size is not into it, an offset in padding is still known, and an integer made of pointers is no pointer
#include <stdio.h>
#include <stdlib.h>

struct small {
  int a;
  int b;
};

struct big {
  int x[8];
  int y;
};

struct padded {
  char c;
  int n;
};

struct pair_of_chars {
  char c;
  char d;
};

struct holder {
  void *state;
};

int main(int argc, char **argv) {
  struct holder h;
  struct small *s = malloc(sizeof *s);
  struct big *g = malloc(sizeof *g);
  if (s == NULL || g == NULL)
    return 1;
  h.state = argc > 1 ? (void *)s : (void *)g;
  struct big *view = h.state;
  // note: y lies past the end of a struct small: view points into g only here
  view->y = 1;
  s->a = 1;
  s->b = 2;
  printf("%d %d\n", s->a, s->b);
  printf("%d\n", g->x[0]); // expect: uninit heap@uninit_42_step_past_an_object.c:33.x
  struct padded *p = malloc(sizeof *p);
  if (p == NULL)
    return 1;
  struct holder k;
  k.state = argc > 2 ? (void *)p : (void *)s;
  struct pair_of_chars *chars = k.state;
  // note: d lies in the padding after p->c: a known offset, not anywhere in p
  chars->d = 'd';
  long distance = (char *)&p->n - (char *)p;
  p->c = 'c';
  p->n = (int)distance;
  printf("%c %d\n", p->c, p->n);
  (void)argv;
  return 0;
}
