// Where status regions live (common/status_region.h), and who a region's
// process is: one set of rules for the recorder, which creates a region,
// and `gpumemrec top`, which finds and checks them.
//
// The directory is per user: GPUMEMREC_STATUS_DIR, else
// /dev/shm/gpumemrec-<uid> (memory, never written back to a disk), else
// /tmp/gpumemrec-<uid> where there is no /dev/shm. Both parents are shared
// and sticky, so another user may have made that name first: the directory
// is used only when it is a real directory (not a link), owned by the user
// and closed to everyone else, as tmux checks its /tmp/tmux-<uid> socket
// directory (tmux.c, expand_paths/make_label: lstat, S_ISDIR, st_uid,
// `sb.st_mode & S_IRWXO`; we also refuse group access).
#pragma once
#include <cstdint>
#include <string>

#include "common/status_region.h"

namespace gpumemrec::status {

// `configured` (GPUMEMREC_STATUS_DIR, "" when unset) or the default for `uid`.
std::string resolve_dir(const std::string& configured, unsigned uid);

// Opens the directory (O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC), after making it
// 0700 when `create` and it is missing. -1 and *why when it cannot be
// opened or is not the user's alone.
int open_dir(const char* path, bool create, std::string* why);

// "<pid>-<start_ticks>.status", and back (false for any other name).
std::string file_name(int pid, uint64_t start_ticks);
bool parse_file_name(const char* name, int* pid, uint64_t* start_ticks);

// The process's start time in clock ticks since boot (/proc/<pid>/stat,
// field 22); false when there is no such process (or it cannot be read).
bool process_start_ticks(int pid, uint64_t* out);
// /proc/sys/kernel/random/boot_id, NUL-terminated; false when unreadable.
bool read_boot_id(char (&out)[kBootIdBytes]);
// The inode of /proc/self/ns/pid (0 when unknown): regions of processes in
// another PID namespace name pids this one cannot check.
uint64_t own_pid_namespace();

}  // namespace gpumemrec::status
