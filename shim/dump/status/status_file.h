// This process's status region file (common/status_region.h): made by the
// peak keeper's thread at its first update, removed at exit.
//
// Made so that a reader never sees half of it and no one else's file is
// ever touched: the per-user directory is checked (common/status_dir.h),
// the file is created under a temporary name with O_CREAT|O_EXCL|O_NOFOLLOW,
// mode 0600, sized, mapped shared, its identity and first body written,
// and only then renamed to "<pid>-<start_ticks>.status" (a rename replaces
// the file an exec of this same process left: same pid, same start time).
// No descriptor stays open (a program may close every descriptor it did not
// open); the mapping stays until the process ends.
//
// Removed at exit() (atexit), _exit() (hooks/exit_hook.cpp) and not after
// a crash or SIGKILL (readers skip a region whose process is gone, and
// `top` removes it). The removal is async-signal-safe (open, fstatat,
// unlinkat on saved paths) and unlinks only the file it made (same device
// and inode).
#pragma once
#include <functional>
#include <string>

#include "common/status_region.h"

namespace gpumemrec {

struct StatusIdentity {
  int rank = -1, world_size = 1, dump_signal = 0;
  std::string command, dump_dir;
};

// The region, mapped, named and filled by `first` (the first body) before
// it is published; null and *why when any step failed (nothing is left
// behind then).
status::Region* status_file_create(const std::string& dir, const StatusIdentity& id,
                                   const std::function<void(status::Region*)>& first, std::string* why);
// Removes the published file (once; later calls do nothing).
void status_file_remove();
// A forked child: the mapping is the parent's file; unmapped, forgotten.
void status_file_forget(status::Region* parent_region);

// The command line of this process, arguments joined by spaces, cut to fit.
std::string status_command_line();

}  // namespace gpumemrec
