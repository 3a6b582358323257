// A small tool with two bugs for `sluice analyze` (README, "Analyzing C and C++ programs"): a
// command built from the environment reaches system(), and a status is printed that one path
// never set.
#include <stdio.h>
#include <stdlib.h>

static int view(const char *viewer, const char *file) {
  char command[256];
  snprintf(command, sizeof command, "%s '%s'", viewer, file);
  return system(command);
}

int main(int argc, char **argv) {
  const char *viewer = getenv("VIEWER");
  if (viewer == NULL)
    viewer = "less";
  int status;
  if (argc > 1)
    status = view(viewer, argv[1]);
  printf("exit status %d\n", status);
  return 0;
}
