// Where `gpumemrec top` finds its processes: the status regions in the
// per-user directory (common/status_dir.h), each read with its sequence
// lock and checked (common/status_read.h) before anything of it is shown.
// A region that cannot be shown is a note (file and why), never an error:
// another user's or a link (never opened), truncated, of another version,
// hostile, stale (no update for 5 s), or of a process that is gone. The
// files of processes that are gone (this boot's and PID namespace's, or an
// earlier boot's) are removed: their name (pid and start time) can never be
// a running process's again.
//
// Nothing here blocks: files are opened O_NONBLOCK (a FIFO named like a
// region does not stop `top`), read with pread, and a region that stays
// mid-update over a few tries is a note for this refresh.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status_read.h"

namespace gpumemrec::cli {

struct TopProcess {
  status::RegionView v;
  std::string file;  // its name in the directory
  dev_t dev = 0;
  ino_t ino = 0;
};

struct TopSkipped {
  std::string file;
  int pid = 0;  // 0 when the name is not a region's
  std::string why;
};

struct TopSnapshot {
  uint64_t mono_ns = 0;  // CLOCK_MONOTONIC when read
  double time = 0;       // seconds since the epoch
  std::vector<TopProcess> processes;  // by pid
  std::vector<TopSkipped> skipped;
};

class TopSource {
 public:
  // `pids`: only these (empty: every region of the directory).
  TopSource(std::string dir, std::vector<int> pids);
  // One pass over the directory. Never throws for what a file holds.
  TopSnapshot read();
  // Asks the process to name its sites until `until_mono_ns` (a pwrite of
  // the region's reader word, on the file `read` found). False when the
  // file is not that one any more.
  bool watch(const TopProcess& p, uint64_t until_mono_ns) const;
  // The existing on-demand dump (GPUMEMREC_DUMP_SIGNAL): the signal sent
  // once the process is checked to be the region's; what happened, in words.
  std::string request_dump(const TopProcess& p) const;
  const std::string& dir() const { return dir_; }

 private:
  bool wanted(int pid) const;
  void read_one(int dfd, const char* name, const status::Expect& base, TopSnapshot* out);

  std::string dir_;
  std::vector<int> pids_;
  std::string boot_id_;
  uint64_t pid_ns_ = 0;
};

// CLOCK_MONOTONIC now.
uint64_t top_mono_ns();

}  // namespace gpumemrec::cli
