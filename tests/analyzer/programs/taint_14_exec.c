// analysis: taint
// the exec family: every argument is a sink, an argv array holding tainted strings included
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
  char *arg = getenv("ARG");
  if (argc > 3)
    execl("/bin/echo", "echo", arg, (char *)NULL); // expect: taint execl
  if (argc > 2)
    execlp(arg, "prog", (char *)NULL); // expect: taint execlp
  char *args[3];
  args[0] = "echo";
  args[1] = arg;
  args[2] = NULL;
  if (argc > 1)
    execv("/bin/echo", args); // expect: taint execv
  char *safe[2];
  safe[0] = "ls";
  safe[1] = NULL;
  execvp("ls", safe);
  (void)argv;
  return 1;
}
