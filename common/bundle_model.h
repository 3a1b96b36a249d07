// In-memory model of a dump bundle (namespace gpumemrec::model: the tools'
// view, distinct from the shim's 64-byte gpumemrec::Event) (docs/bundle-format.md) as the tools read
// it. Plain data, no I/O. Per-event strings (api, context, backend, event
// type, memory type) are interned in a StringTable so a million events cost
// no per-event allocation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/bundle_schema.h"

namespace gpumemrec::model {

// Interns short strings; id 0 is always "".
class StringTable {
 public:
  StringTable() { intern(""); }
  uint16_t intern(std::string_view s);
  const std::string& str(uint16_t id) const { return *strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::vector<std::unique_ptr<std::string>> strings_;
  std::unordered_map<std::string_view, uint16_t> index_;
};

// The bundle schema's enums (common/bundle_schema.h), one for the shim and
// the tools; named here too so the tools can say model::EventKind.
using gpumemrec::EventKind;
using gpumemrec::FrameKind;
using gpumemrec::MemoryType;

struct Event {
  uint64_t seq = 0;
  double timestamp = 0;
  uint64_t memory_allocated = 0;
  uint64_t memory_reserved = 0;
  int64_t memory_change = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stack_id = 0;
  uint64_t duration_ns = 0;
  uint64_t stream = 0;
  int64_t result = 0;
  int32_t device_id = -1;
  uint32_t thread_id = 0;
  uint16_t event_type = 0;  // interned original name
  uint16_t api = 0;         // interned
  uint16_t context = 0;     // interned
  uint16_t backend = 0;     // interned
  uint16_t memory_type = 0; // interned original name
  EventKind kind = EventKind::kOther;
  MemoryType mem_kind = MemoryType::kOther;
};

// Allocator for the big per-event arrays: blocks of 32 MiB and more are
// mmap'd with transparent huge pages requested, which cuts the page faults
// of a million-event bundle by ~500x.
void* big_alloc(size_t bytes);
void big_free(void* p, size_t bytes);
// Gives the memory of the first `prefix` bytes of a big_alloc(bytes) block
// back to the system (whole pages; only for blocks big_alloc mapped). Their
// content is undefined afterwards: for data already copied elsewhere.
void big_discard(void* p, size_t bytes, size_t prefix);
template <typename T>
struct BigAllocator {
  using value_type = T;
  BigAllocator() = default;
  template <typename U>
  BigAllocator(const BigAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(big_alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { big_free(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const BigAllocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const BigAllocator<U>&) const { return false; }
};
using EventVector = std::vector<Event, BigAllocator<Event>>;

struct Allocation {
  uint64_t address = 0;
  uint64_t size = 0;
  int32_t device_id = -1;
  std::string api;
  std::string memory_type;
  double timestamp = 0;
  uint32_t thread_id = 0;
  uint64_t stack_id = 0;
  uint64_t seq = 0;
};

struct Frame {
  FrameKind kind = FrameKind::kOther;
  std::string module;
  uint64_t offset = 0;
  std::string function;
  std::string file;
  int64_t line = 0;
};

struct Stack {
  uint64_t stack_id = 0;
  std::string python;  // captured / borrowed / native_thread / no_gil / not_python / disabled
  // python "borrowed" (or "captured" with python_borrow "outer": the own
  // frames' callers were lent): the kernel id of the thread that lent its
  // frames (0 = unknown); "native_thread": python_borrow "ambiguous" when two
  // or more Python threads waited in backward (common/autograd_node.h).
  uint64_t python_thread = 0;
  std::string python_borrow;
  bool has_lender() const { return python == "borrowed" || python_borrow == "outer"; }
  std::string autograd_node;  // "MmBackward0"; "" = none
  std::vector<Frame> frames;  // innermost first, as stacks.json lists them (common/frame_order.h)
  // Who holds the memory (common/site_rules.h): stacks.json `site_frame`
  // and `library`, or computed by the reader for bundles without them.
  int64_t site_frame = -1;  // index into frames; -1 = none
  std::string library;      // owning library's basename, "" = unknown
  bool attributed = false;  // site_frame/library are set
};

struct Manifest {
  int64_t schema_version = 0;
  std::string bundle_name;
  std::string created_at_utc;
  std::string reason;
  std::string backend;
  uint64_t event_count = 0;
  std::vector<std::string> files;
  std::string generator;
  int64_t pid = 0;
  std::string outcome;  // "" when absent (signal/exit bundles, bundles from before verdicts)
};

// The out-of-memory verdict (docs/bundle-format.md, "Out-of-memory verdicts").
// metadata.json "recovery" when the episode recovered.
struct Recovery {
  double after_ms = 0;
  uint64_t freed_bytes = 0;
  uint64_t retry_size = 0;
  std::string retry_api;
  uint32_t thread_id = 0;
  std::string handler;  // the program's handler that caught the error and retries; "" = the allocation's retry
};

// One entry of metadata.json "recovered_failures.listed".
struct RecoveredFailure {
  double timestamp = 0;
  int32_t device_id = -1;
  uint64_t size = 0;
  std::string api;
  uint32_t thread_id = 0;
  uint64_t stack_id = 0;
  double after_ms = 0;
  uint64_t freed_bytes = 0;
};

// The reader keeps at most this many listed entries (the shim writes 32).
constexpr size_t kMaxRecoveredListed = 1024;

// metadata.json "device_accounting" (common/card_accounting.h).
struct GpuProcessUse {
  uint32_t pid = 0;
  std::string name;
  std::optional<uint64_t> used_bytes;  // NVML may refuse to say
  bool this_process = false;
};
struct DeviceAccounting {
  int32_t device = -1;
  std::optional<uint64_t> total_bytes;
  std::optional<uint64_t> free_bytes;
  uint64_t recorded_live_bytes = 0;
  std::vector<std::pair<std::string, uint64_t>> recorded_by_library;  // largest first
  std::optional<int64_t> process_unrecorded_bytes;
  std::optional<std::vector<GpuProcessUse>> other_processes;  // null without NVML
  std::optional<int64_t> unaccounted_bytes;
  std::string note;  // why a figure is null; "" when every figure is known
};

// A signal bundle's requests (GPUMEMREC_DUMP_SIGNAL): the handler runs it
// serves, with their times (CLOCK_REALTIME ns) and the last sender.
struct SignalRequests {
  int32_t signal = 0;
  uint64_t count = 0;
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  int64_t sender_pid = 0;
};

struct Metadata {
  std::string reason;
  std::string api;
  int64_t error_code = 0;
  std::string error_name;
  uint64_t requested_bytes = 0;
  int32_t device_id = -1;
  std::optional<uint64_t> device_free_bytes;
  std::optional<uint64_t> device_total_bytes;
  uint64_t live_bytes = 0;
  uint64_t live_allocations = 0;
  std::map<int32_t, uint64_t> live_bytes_by_device;
  uint32_t thread_id = 0;
  uint64_t stack_id = 0;
  std::string context;
  std::string backend;
  uint64_t captured_event_count = 0;
  uint64_t total_event_count = 0;
  // Set by the shim's writer for summary.txt, not read from metadata.json
  // (the tools tell it from the lowest seq, tools/analysis.h
  // events_not_kept): events.json starts at seq 1, so it holds every event
  // recorded before the cut and total_event_count (seqs handed out, unused
  // ones of the threads' blocks included) says nothing more.
  bool events_since_start = false;
  uint64_t failed_calls_before_dump = 0;
  double frozen_after_failure_ms = 0;  // 0: the state is the failure's own
  std::optional<SignalRequests> signal_requests;  // signal bundles only
  double timestamp = 0;
  // custom_metadata: every key with its value rendered as text.
  std::vector<std::pair<std::string, std::string>> custom_metadata;
  std::optional<int64_t> rank;
  std::string hostname;  // custom_metadata.hostname or environment.hostname
  std::string outcome;         // "" when absent
  std::string outcome_detail;  // "" when absent
  std::optional<Recovery> recovery;
  // recovered_failures: count is at least listed.size(); listed holds the
  // first kMaxRecoveredListed entries, oldest first.
  uint64_t recovered_count = 0;
  std::vector<RecoveredFailure> recovered_listed;
  std::vector<DeviceAccounting> device_accounting;  // empty when absent
  // simulated: made on gpumemrec's simulated card (docs/simulate.md).
  struct Simulated {
    std::string profile;  // "h100-80gb"
    std::string name;     // "NVIDIA H100 80GB HBM3"
    int32_t devices = 0;
  };
  std::optional<Simulated> simulated;
};

struct DeviceInfo {
  int32_t device_id = -1;
  std::string name;
  uint64_t total_bytes = 0;
};

struct Environment {
  bool present = false;
  int64_t pid = 0;
  int64_t ppid = 0;
  std::string cwd;
  std::vector<std::string> cmdline;
  std::string hostname;
  int64_t driver_version = 0;
  int64_t runtime_version = 0;
  std::vector<DeviceInfo> devices;
  std::vector<std::pair<std::string, std::string>> env;
};

struct Bundle {
  std::string path;  // directory as given
  Manifest manifest;
  Metadata metadata;
  EventVector events;                   // oldest first
  std::vector<Allocation> allocations;  // as in the file (largest first)
  std::vector<Stack> stacks;
  std::unordered_map<uint64_t, size_t> stack_index;  // stack_id -> stacks[i]
  Environment environment;
  StringTable strings;

  const Stack* find_stack(uint64_t id) const {
    auto it = stack_index.find(id);
    return it == stack_index.end() ? nullptr : &stacks[it->second];
  }
  const std::string& str(uint16_t id) const { return strings.str(id); }
  std::string hostname() const {
    return metadata.hostname.empty() ? environment.hostname : metadata.hostname;
  }
  // The verdict: a known one ("recovered", "fatal", ...) from metadata.json,
  // else manifest.json's, else "unknown" when either says so, else "" (no
  // verdict: signal/exit bundles, older bundles). The shim replaces the two
  // files one after the other when the verdict is known, so a process that
  // dies between the renames leaves them disagreeing: the decided verdict
  // wins over "unknown".
  std::string outcome() const;
  // metadata.json's outcome_detail when it goes with outcome(), else "".
  std::string outcome_detail() const;
};

// "function (file:line)" for python/native frames with symbols, otherwise
// "module+0xoffset" (module basename).
std::string format_frame(const Frame& f);

}  // namespace gpumemrec::model
