// Reading a status region (common/status_region.h) that another process
// wrote: every field checked, every string made safe to print on a
// terminal. Used by `gpumemrec top` (tools/top_source.cpp), its tests and
// the fuzz target (tests/fuzz/fuzz_status_region.cpp).
//
// read_region() takes the bytes as copied: it checks the layout (magic,
// version, size, counts, enums, flags, strings NUL-terminated in their
// fields) and refuses a body that was being written (odd seq). Whether the
// region is this user's, of this boot, of a process that still runs and
// still updates it is check_identity()'s, against what the caller found on
// the host. Each refusal is one phrase, for a note beside the list.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status_region.h"

namespace gpumemrec::status {

struct DeviceView {
  int device = -1;
  bool peak_exact = false;
  uint64_t live_bytes = 0, peak_bytes = 0;
  uint64_t peak_real_ns = 0;
  std::string bus_id;
  std::vector<uint64_t> curve;  // oldest first, one sample a second, the newest last
};

struct SiteView {
  uint64_t bytes = 0, count = 0, stack_id = 0;
  uint32_t stacks = 0;
  bool named = false;
  std::string label, library;
};

struct RolesView {
  bool present = false;
  int device = -1;
  uint64_t at_real_ns = 0;
  uint64_t bytes[kRoles] = {};
  std::string status, at;
};

struct RegionView {
  // identity
  uint32_t uid = 0;
  int pid = 0;
  uint64_t pid_ns = 0, start_ticks = 0;
  std::string boot_id;
  int rank = -1, world_size = 1, dump_signal = 0;
  std::string command, dump_dir;
  uint64_t watch_until_mono_ns = 0;
  // body
  uint64_t seq = 0;
  uint64_t updates = 0, updated_mono_ns = 0, updated_real_ns = 0;
  uint32_t state = kStateExact, names = kNamesOff;
  uint64_t sites_total = 0, events = 0;
  uint64_t curve_newest_mono_ns = 0;
  std::vector<DeviceView> devices;
  std::vector<SiteView> sites;
  RolesView roles;
  std::string note;
};

// `n` bytes of a region file into *out. False and *why when they are not a
// complete, consistent region of this version.
bool read_region(const void* bytes, size_t n, RegionView* out, std::string* why);

// What the reader found on the host for a region file.
struct Expect {
  uint32_t uid = 0;              // the reader's
  int pid = 0;                   // from the file's name
  uint64_t start_ticks = 0;      // from the file's name
  std::string boot_id;           // this boot's ("" unknown: not checked)
  uint64_t pid_ns = 0;           // the reader's PID namespace (0 unknown: not checked)
  bool alive = false;            // /proc/<pid>/stat exists with start_ticks
  uint64_t now_mono_ns = 0;
  uint64_t stale_after_ns = 5000000000ull;  // no update for this long: the process is stopped or stuck
};

// Why the region is not one to show ("" when it is): another user's, a name
// that does not match, another boot, another PID namespace, the process
// gone, no update for a while, an update from the future.
std::string check_identity(const RegionView& v, const Expect& e);

// A string of up to `cap` bytes from a field, cut at its first NUL, with
// every byte that is not printable UTF-8 (controls, escapes, bad sequences)
// replaced by '?'. False when the field has no NUL.
bool field_text(const char* field, size_t cap, std::string* out);

}  // namespace gpumemrec::status
