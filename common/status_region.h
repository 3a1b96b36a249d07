// The status region: what a process running with the recorder publishes
// for `gpumemrec top` (docs/design.md, "The status region"). One file per
// process in a per-user directory (common/status_dir.h), mapped shared by
// the process and read with pread by `top`; its layout is this struct, the
// same bytes on both sides (x86-64 Linux only, like the recorder).
//
// Who writes what:
//  - the identity (magic .. dump_dir): once, before the file gets its name
//    (created under a temporary name and renamed), never again;
//  - `watch_until_mono_ns`: by readers only (`top` asks for site names by
//    writing a CLOCK_MONOTONIC deadline there with pwrite);
//  - `seq` and the body: by the recorder's peak keeper thread, at most every
//    kUpdateNs, as a sequence lock: `seq` odd while the body is written.
//    A reader copies the body and keeps it only when `seq` was even and the
//    same before and after the copy (common/status_read.h).
//
// Every field a reader uses is checked by the reader (status_read.cpp):
// the writer is another process, possibly of another version, possibly
// gone half-way, and the file may have been written by anyone with the
// user's rights.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gpumemrec::status {

constexpr char kMagic[8] = {'G', 'M', 'R', 'S', 'T', 'A', 'T', '1'};
constexpr uint32_t kVersion = 1;

constexpr int kDevices = 8;           // devices a region lists (the first 8 that held memory)
constexpr int kSites = 16;            // top sites by live bytes
constexpr int kCurvePoints = 240;     // one sample a second: the last four minutes
constexpr uint64_t kCurveStepNs = 1000000000ull;
constexpr uint64_t kUpdateNs = 100000000ull;  // at most one update per 100 ms
constexpr int kRoles = 7;             // common/framework_roles.h, kRoles, in that order

constexpr size_t kLabelBytes = 192;   // a site frame's short label (common/names.h, frame_label)
constexpr size_t kLibraryBytes = 64;  // the owning library
constexpr size_t kCommandBytes = 256; // the command line, arguments joined by spaces
constexpr size_t kDirBytes = 256;     // GPUMEMREC_DIR
constexpr size_t kBootIdBytes = 40;   // /proc/sys/kernel/random/boot_id
constexpr size_t kBusIdBytes = 32;    // the driver's PCI bus id of the device
constexpr size_t kNoteBytes = 160;    // why figures are not exact, in words
constexpr size_t kRoleTextBytes = 16;

// Body::state: how far the figures go.
enum State : uint32_t {
  kStateExact = 0,     // live, peak and sites as of updated_mono_ns
  kStateSettled = 1,   // sites and peak as of the keeper's horizon (about 0.1 s behind, busy program)
  kStateNoSites = 2,   // the peak keeper lost events or does not run: live bytes only, peak a lower bound
};
constexpr uint32_t kStateLast = kStateNoSites;

// Body::names: whether the sites carry names.
enum Names : uint32_t {
  kNamesOff = 0,      // nobody asked (watch_until_mono_ns passed): stack ids only
  kNamesPartial = 1,  // being named (a few stacks per update)
  kNamesDone = 2,     // every listed site is named
};
constexpr uint32_t kNamesLast = kNamesDone;

// DeviceSlot::flags
constexpr uint32_t kPeakExact = 1;    // the peak is the run's exact high-water mark (peak.json's `exact`)
constexpr uint32_t kDeviceFlags = kPeakExact;

struct DeviceSlot {
  int32_t device;                // the program's device ordinal
  uint32_t flags;
  uint64_t live_bytes;           // recorded live now
  uint64_t peak_bytes;           // the run's high-water mark so far
  uint64_t peak_real_ns;         // when (CLOCK_REALTIME); 0 = unknown
  char bus_id[kBusIdBytes];      // "0000:01:00.0" from the driver, "" when unknown (NVML is matched by it)
  uint64_t curve[kCurvePoints];  // live bytes, the highest of each second; ring indexed by Body::curve_newest
};

struct SiteSlot {
  uint64_t bytes;
  uint64_t count;
  uint64_t stack_id;             // the site's largest stack
  uint32_t stacks;               // stacks grouped into it
  uint32_t named;                // 1: label and library are set
  char label[kLabelBytes];       // the site frame as `gpumemrec report` prints it
  char library[kLibraryBytes];   // the owning library ("" unknown)
};

// The framework's memory by role, when the Python hook handed one over (at
// an out-of-memory, or at exit: docs/python-hook.md).
struct RolesSlot {
  uint32_t present;
  int32_t device;
  uint64_t at_real_ns;
  uint64_t bytes[kRoles];
  char status[kRoleTextBytes];   // "complete", "partial", "failed"
  char at[kRoleTextBytes];       // "oom" or "exit"
};

struct Body {
  uint64_t updates;
  uint64_t updated_mono_ns;      // CLOCK_MONOTONIC of this update
  uint64_t updated_real_ns;      // CLOCK_REALTIME of this update
  uint32_t state;                // State
  uint32_t names;                // Names
  uint32_t ndevices;             // devices[0, ndevices) are used
  uint32_t nsites;               // sites[0, nsites) are used
  uint64_t sites_total;          // sites (stacks, when unnamed) holding memory, listed or not
  uint64_t curve_newest;         // index of the newest sample in each device's curve
  uint64_t curve_count;          // samples taken (at most kCurvePoints are kept)
  uint64_t curve_newest_mono_ns; // when the newest sample's second ended
  uint64_t events;               // events recorded since the start
  DeviceSlot devices[kDevices];
  SiteSlot sites[kSites];
  RolesSlot roles;
  char note[kNoteBytes];
};

struct Region {
  // The identity, written once.
  char magic[8];
  uint32_t version;
  uint32_t size;                 // sizeof(Region)
  uint32_t uid;
  int32_t pid;
  uint64_t pid_ns;               // inode of /proc/self/ns/pid
  uint64_t start_ticks;          // /proc/self/stat field 22: with pid, the process
  char boot_id[kBootIdBytes];
  int32_t rank;                  // the launcher's rank, -1 outside a distributed launch
  int32_t world_size;
  int32_t dump_signal;           // GPUMEMREC_DUMP_SIGNAL, 0 = none
  uint32_t reserved0;
  char command[kCommandBytes];
  char dump_dir[kDirBytes];
  // Readers' word, on its own line.
  alignas(64) uint64_t watch_until_mono_ns;
  // The body under the sequence lock.
  alignas(64) uint64_t seq;
  Body body;
};

// How a region file is named: "<pid>-<start_ticks>.status" (a pid and the
// process's start time are one process for the boot).
constexpr const char* kFileSuffix = ".status";

}  // namespace gpumemrec::status
