// Running part of a unit test in a forked child (a promise about signals,
// exits or a crash must not take the test program with it).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

namespace unit_process {

// Runs fn() in a child that exits with its result (fn may also end the
// child itself); returns the child's wait status.
template <class Fn>
int in_child(Fn fn) {
  const pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

}  // namespace unit_process
