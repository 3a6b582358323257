// analysis: taint
// a struct filled and used through pointer parameters: taint stays in the field it was stored into
#include <stdio.h>
#include <stdlib.h>

struct job {
  char *cmd;
  char *log;
};

static void load_job(struct job *j) {
  j->cmd = getenv("JOB");
  j->log = "/var/log/job";
}

static void run_job(const struct job *j) {
  system(j->cmd); // expect: taint system
  puts(j->log);
}

int main(void) {
  struct job job;
  load_job(&job);
  run_job(&job);
  system(job.log);
  return 0;
}
