// Core of the fake GPU drivers: configuration, address arenas, the ledger of
// live allocations, VMM bookkeeping and the JSON ledger writer.
#include "core/ledger.h"

#include "core/shared_ledger.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace sim {
namespace {


uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Device address ranges sit where Linux also places host mappings
// (0x7f..., as real UVA pointers do). Like a real driver, the arena reserves
// the address space it hands out (PROT_NONE, no memory committed) in granules
// as its high-water mark grows, so host memory can never alias a fake device
// pointer; a granule the host already uses is skipped.
constexpr uint64_t kReserveGranule = 256ull << 20;

// First-fit allocator over one address range. Lengths are multiples of 256.
class Arena {
 public:
  Arena() = default;
  void init(uint64_t base, uint64_t end, bool reserve_host_va) {
    free_.clear();
    free_[base] = end - base;
#if defined(__SANITIZE_THREAD__)
    reserve_host_va = false;  // TSan rewrites fixed mmaps outside its application ranges
#endif
    reserve_ = reserve_host_va;
    reserved_end_ = base;
    end_ = end;
  }

  bool alloc(uint64_t len, uint64_t align, uint64_t* out) {
    for (;;) {
      auto it = free_.begin();
      uint64_t start = 0;
      for (; it != free_.end(); ++it) {
        const uint64_t fstart = it->first;
        const uint64_t fend = it->first + it->second;
        start = round_up(fstart, align);
        if (start >= fstart && start <= fend && fend - start >= len) break;
      }
      if (it == free_.end()) return false;
      if (!reserve_upto(start + len)) continue;  // a granule was taken by the host: search again
      take(it, start, len);
      *out = start;
      return true;
    }
  }

  // Allocates exactly at `start` if that range is free.
  bool alloc_at(uint64_t start, uint64_t len) {
    auto it = free_.upper_bound(start);
    if (it == free_.begin()) return false;
    --it;
    const uint64_t fend = it->first + it->second;
    if (start < it->first || start > fend || fend - start < len) return false;
    if (!reserve_upto(start + len)) return false;
    it = std::prev(free_.upper_bound(start));
    take(it, start, len);
    return true;
  }

  void release(uint64_t start, uint64_t len) {
    auto next = free_.lower_bound(start);
    uint64_t s = start;
    uint64_t l = len;
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == s) {
        s = prev->first;
        l += prev->second;
        free_.erase(prev);
      }
    }
    if (next != free_.end() && s + l == next->first) {
      l += next->second;
      free_.erase(next);
    }
    free_[s] = l;
  }

 private:
  void take(std::map<uint64_t, uint64_t>::iterator it, uint64_t start, uint64_t len) {
    const uint64_t fstart = it->first;
    const uint64_t fend = it->first + it->second;
    free_.erase(it);
    if (start > fstart) free_[fstart] = start - fstart;
    if (start + len < fend) free_[start + len] = fend - (start + len);
  }

  // Removes [s, e) from the free list for good.
  void block(uint64_t s, uint64_t e) {
    auto it = free_.upper_bound(s);
    if (it != free_.begin()) --it;
    while (it != free_.end() && it->first < e) {
      const uint64_t fs = it->first;
      const uint64_t fe = it->first + it->second;
      if (fe <= s) {
        ++it;
        continue;
      }
      it = free_.erase(it);
      if (fs < s) free_[fs] = s - fs;
      if (fe > e) {
        free_[e] = fe - e;
        break;
      }
    }
  }

  // Reserves the address space up to `end`. False if a granule had to be
  // blocked because the host already maps something there.
 public:
  bool reserve_upto(uint64_t end) {
    if (!reserve_) return true;
    bool ok = true;
    while (reserved_end_ < end && reserved_end_ < end_) {
      const uint64_t g = reserved_end_;
      reserved_end_ = g + kReserveGranule;
      void* want = reinterpret_cast<void*>(static_cast<uintptr_t>(g));
      void* r = mmap(want, kReserveGranule, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                     -1, 0);
      if (r == want) continue;
      if (r != MAP_FAILED) {
        munmap(r, kReserveGranule);  // kernel without MAP_FIXED_NOREPLACE: the range is in use
      } else if (errno != EEXIST) {
        continue;  // cannot be mapped at all (beyond the user address space): nothing to collide with
      }
      block(g, g + kReserveGranule);
      ok = false;
    }
    return ok;
  }

 private:
  std::map<uint64_t, uint64_t> free_;  // start -> length
  bool reserve_ = false;
  uint64_t reserved_end_ = 0;
  uint64_t end_ = 0;
};

struct Entry {
  uint64_t size;   // accounted bytes (what the caller asked for)
  uint64_t span;   // bytes taken from the arena (size rounded up)
  int device;
  Kind kind;
  Arena* arena;    // nullptr for physical handles
};

struct Mapping {
  uint64_t size;
  uint64_t handle;
  uint64_t offset;
};

struct State {
  std::mutex mu;
  Arena device_arena[kMaxDevices];
  Arena v1_arena;
  Arena va_arena;
  std::map<uint64_t, Entry> live;           // address or handle -> entry
  std::map<uint64_t, uint64_t> reservations;  // VA start -> size
  std::map<uint64_t, Mapping> mappings;     // VA start -> mapping
  uint64_t used[kMaxDevices] = {};
  uint64_t pool_kept[kMaxDevices] = {};  // freed by cuMemFreeAsync, not yet released
  bool context_active[kMaxDevices] = {};  // the device's primary context exists (note_context)
  uint64_t pool_used[kMaxDevices] = {};  // live cuMemAllocAsync bytes
  uint64_t pool_threshold[kMaxDevices] = {};  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD (default 0)
  uint64_t pool_reserved_high[kMaxDevices] = {};
  uint64_t pool_used_high[kMaxDevices] = {};
  uint64_t next_handle = 1;

  State() {
    for (int d = 0; d < kMaxDevices; ++d) {
      const uint64_t base = kDeviceBase + (static_cast<uint64_t>(d) << 40);
      device_arena[d].init(base, base + kDeviceSpan, config().reserve_va);
    }
    v1_arena.init(kV1Base, kV1End, false);
    va_arena.init(kVaBase, kVaBase + kVaSpan, false);
  }
};

// Never destroyed: the ledger is written from a library destructor, which may
// run after C++ static destructors of this library.
State& state() {
  static State* s = new State();
  return *s;
}

pid_t g_loader_pid = 0;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Device: return "device";
    case Kind::Managed: return "managed";
    case Kind::Physical: return "physical";
  }
  return "device";
}

bool device_ok(int device) { return device >= 0 && device < config().devices; }

// What the device holds besides this process's allocations.
uint64_t overhead(int device) {
  const Config& c = config();
  return c.context_bytes + c.reserved_bytes + (device == 0 ? c.others_bytes : 0);
}

// What the run's other processes see of this one on `device` (NVML's figure):
// core/shared_ledger.h. Requires s.mu held.
void publish_locked(State& s, int device) {
  shared::publish(device, s.used[device] + s.pool_kept[device] +
                              (s.context_active[device] ? config().context_bytes : 0));
}

// A stream-ordered allocation of `size`, `reuse` of it from what the pool
// kept: the pool's statistics (cuMemPoolGetAttribute). Requires s.mu held.
void take_from_pool_locked(State& s, int device, uint64_t size, uint64_t reuse) {
  s.pool_kept[device] -= reuse;
  s.pool_used[device] += size;
  const uint64_t reserved = s.pool_used[device] + s.pool_kept[device];
  if (reserved > s.pool_reserved_high[device]) s.pool_reserved_high[device] = reserved;
  if (s.pool_used[device] > s.pool_used_high[device]) s.pool_used_high[device] = s.pool_used[device];
}

// The capacity check: this process's bytes and overhead, and what the run's
// other processes hold (xlock: the device's cross-process lock, held until
// the allocation is published). Requires s.mu held.
// What a stream-ordered pool keeps is the device's, not free: `reuse` of it
// is what this allocation takes back from the pool (alloc_from_pool).
bool fits(State& s, shared::DeviceLock& xlock, int device, uint64_t size, uint64_t reuse = 0) {
  const uint64_t cap = config().capacity;
  if (size > cap) return false;
  const uint64_t mine = s.used[device] + s.pool_kept[device] - reuse + overhead(device);
  if (mine + xlock.others(false) <= cap - size) return true;
  return mine + xlock.others(true) <= cap - size;  // with the shares of processes that died freed
}

}  // namespace

void note_context(int device) {
  if (device < 0 || device >= kMaxDevices) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.context_active[device]) return;
  s.context_active[device] = true;
  publish_locked(s, device);
}

namespace {

// alloc and alloc_from_pool: `pooled` takes from what the device's pool keeps first.
int alloc_impl(int device, uint64_t size, Kind kind, uint64_t align, bool v1_arena, bool pooled, uint64_t* out) {
  if (out == nullptr || size == 0) return kInvalid;
  if (!device_ok(device)) return kBadDevice;
  if (align == 0) align = kAlign;
  if (!is_pow2(align) || align < kAlign) return kInvalid;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  shared::DeviceLock xlock(device);
  const uint64_t reuse = pooled ? std::min<uint64_t>(size, s.pool_kept[device]) : 0;
  if (!fits(s, xlock, device, size, reuse)) return kOom;
  const uint64_t span = round_up(size, kAlign);
  if (span < size) return kOom;  // overflow
  Arena* arena = v1_arena ? &s.v1_arena : &s.device_arena[device];
  uint64_t addr = 0;
  if (!arena->alloc(span, align, &addr)) return kOom;  // address space exhausted
  s.live[addr] = Entry{size, span, device, kind, arena};
  s.used[device] += size;
  if (pooled) take_from_pool_locked(s, device, size, reuse);
  publish_locked(s, device);
  *out = addr;
  return kOk;
}

}  // namespace

int alloc(int device, uint64_t size, Kind kind, uint64_t align, bool v1_arena, uint64_t* out) {
  return alloc_impl(device, size, kind, align, v1_arena, false, out);
}

int alloc_from_pool(int device, uint64_t size, uint64_t* out) {
  return alloc_impl(device, size, Kind::Device, 0, false, true, out);
}

namespace {

// The allocation's range goes back to its arena; its bytes to the device,
// or to the process's pool (to_pool: a stream-ordered free).
int release_alloc(uint64_t addr, bool to_pool) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.live.find(addr);
  if (it == s.live.end() || it->second.kind == Kind::Physical) return kInvalid;
  it->second.arena->release(addr, it->second.span);
  s.used[it->second.device] -= it->second.size;
  if (to_pool) {
    const int d = it->second.device;
    s.pool_kept[d] += it->second.size;
    s.pool_used[d] -= it->second.size < s.pool_used[d] ? it->second.size : s.pool_used[d];
  }
  publish_locked(s, it->second.device);
  s.live.erase(it);
  return kOk;
}

}  // namespace

int free_ptr(uint64_t addr) { return release_alloc(addr, false); }

int free_to_pool(uint64_t addr) { return release_alloc(addr, true); }


void pool_release_all() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (int d = 0; d < kMaxDevices; ++d)
    if (s.pool_kept[d] + s.pool_used[d] > s.pool_threshold[d]) {
      s.pool_kept[d] = s.pool_threshold[d] > s.pool_used[d] ? s.pool_threshold[d] - s.pool_used[d] : 0;
      publish_locked(s, d);
    }
}

void pool_trim(int device, uint64_t keep) {
  if (device < 0 || device >= kMaxDevices) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.pool_kept[device] + s.pool_used[device] > keep)
    s.pool_kept[device] = keep > s.pool_used[device] ? keep - s.pool_used[device] : 0;
  publish_locked(s, device);
}

PoolStats pool_stats(int device) {
  if (device < 0 || device >= kMaxDevices) return PoolStats{};
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return PoolStats{s.pool_used[device] + s.pool_kept[device], s.pool_reserved_high[device], s.pool_used[device],
                   s.pool_used_high[device], s.pool_threshold[device]};
}

void pool_set(int device, PoolField field, uint64_t value) {
  if (device < 0 || device >= kMaxDevices) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  switch (field) {
    case PoolField::Threshold: s.pool_threshold[device] = value; break;
    case PoolField::ReservedHigh: s.pool_reserved_high[device] = s.pool_used[device] + s.pool_kept[device]; break;
    case PoolField::UsedHigh: s.pool_used_high[device] = s.pool_used[device]; break;
  }
}

uint64_t pool_kept_bytes(int device) {
  if (device < 0 || device >= kMaxDevices) return 0;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.pool_kept[device];
}

int reset_device(int device) {
  if (!device_ok(device)) return 0;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto m = s.mappings.begin(); m != s.mappings.end();) {
    auto h = s.live.find(m->second.handle);
    m = h != s.live.end() && h->second.device == device ? s.mappings.erase(m) : std::next(m);
  }
  int n = 0;
  for (auto it = s.live.begin(); it != s.live.end();) {
    if (it->second.device != device) {
      ++it;
      continue;
    }
    if (it->second.arena) it->second.arena->release(it->first, it->second.span);
    it = s.live.erase(it);
    ++n;
  }
  s.used[device] = 0;
  s.pool_kept[device] = 0;
  s.context_active[device] = false;  // the primary context is gone with its memory
  publish_locked(s, device);
  s.pool_used[device] = 0;
  return n;
}

bool is_live(uint64_t addr) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.live.count(addr) != 0;
}

bool find(uint64_t addr, Found* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.live.upper_bound(addr);
  if (it != s.live.begin()) {
    --it;
    const Entry& e = it->second;
    if (e.kind != Kind::Physical && addr < it->first + (e.size == 0 ? 1 : e.size)) {
      *out = Found{it->first, e.size, e.device, e.kind, 0};
      return true;
    }
  }
  auto m = s.mappings.upper_bound(addr);
  if (m == s.mappings.begin()) return false;
  --m;
  if (addr >= m->first + m->second.size) return false;
  auto h = s.live.find(m->second.handle);
  const int device = h != s.live.end() ? h->second.device : 0;
  *out = Found{m->first, m->second.size, device, Kind::Physical, m->second.handle};
  return true;
}

int physical_device(uint64_t handle) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.live.find(handle);
  return it != s.live.end() && it->second.kind == Kind::Physical ? it->second.device : -1;
}

int create_physical(int device, uint64_t size, uint64_t* handle) {
  if (handle == nullptr || size == 0 || size % kGranularity != 0) return kInvalid;
  if (!device_ok(device)) return kBadDevice;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  shared::DeviceLock xlock(device);
  if (!fits(s, xlock, device, size)) return kOom;
  const uint64_t h = kHandleBase + (s.next_handle++ << 12);
  s.live[h] = Entry{size, 0, device, Kind::Physical, nullptr};
  s.used[device] += size;
  publish_locked(s, device);
  *handle = h;
  return kOk;
}

int release_physical(uint64_t handle) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.live.find(handle);
  if (it == s.live.end() || it->second.kind != Kind::Physical) return kInvalid;
  // Simplification: the physical memory is returned at release even if a
  // mapping still refers to it (the real driver defers until the last unmap).
  s.used[it->second.device] -= it->second.size;
  publish_locked(s, it->second.device);
  s.live.erase(it);
  return kOk;
}

int reserve_va(uint64_t size, uint64_t align, uint64_t hint, uint64_t* out) {
  if (out == nullptr || size == 0 || size % kGranularity != 0) return kInvalid;
  if (align == 0) align = kGranularity;
  if (!is_pow2(align)) return kInvalid;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t addr = 0;
  if (hint != 0 && hint % align == 0 && s.va_arena.alloc_at(hint, size)) {
    addr = hint;
  } else if (!s.va_arena.alloc(size, align, &addr)) {
    return kOom;
  }
  s.reservations[addr] = size;
  *out = addr;
  return kOk;
}

int free_va(uint64_t ptr, uint64_t size) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.reservations.find(ptr);
  if (it == s.reservations.end() || it->second != size) return kInvalid;
  // Drop any mapping left inside the range.
  auto m = s.mappings.lower_bound(ptr);
  while (m != s.mappings.end() && m->first < ptr + size) m = s.mappings.erase(m);
  s.va_arena.release(ptr, size);
  s.reservations.erase(it);
  return kOk;
}

namespace {
// Requires s.mu held. True if [ptr, ptr+size) lies inside one reservation.
bool inside_reservation(State& s, uint64_t ptr, uint64_t size) {
  auto it = s.reservations.upper_bound(ptr);
  if (it == s.reservations.begin()) return false;
  --it;
  return ptr >= it->first && ptr + size <= it->first + it->second && ptr + size > ptr;
}
}  // namespace

int map(uint64_t ptr, uint64_t size, uint64_t offset, uint64_t handle) {
  if (size == 0 || ptr % kGranularity != 0 || size % kGranularity != 0 || offset % kGranularity != 0) return kInvalid;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto h = s.live.find(handle);
  if (h == s.live.end() || h->second.kind != Kind::Physical) return kInvalid;
  if (offset > h->second.size || size > h->second.size - offset) return kInvalid;
  if (!inside_reservation(s, ptr, size)) return kInvalid;
  auto next = s.mappings.lower_bound(ptr);
  if (next != s.mappings.end() && next->first < ptr + size) return kInvalid;
  if (next != s.mappings.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > ptr) return kInvalid;
  }
  s.mappings[ptr] = Mapping{size, handle, offset};
  return kOk;
}

int unmap(uint64_t ptr, uint64_t size) {
  if (size == 0) return kInvalid;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  // A mapping straddling either end of the range is an error.
  auto first = s.mappings.lower_bound(ptr);
  if (first != s.mappings.begin()) {
    auto prev = std::prev(first);
    if (prev->first + prev->second.size > ptr) return kInvalid;
  }
  auto last = first;
  int removed = 0;
  while (last != s.mappings.end() && last->first < ptr + size) {
    if (last->first + last->second.size > ptr + size) return kInvalid;
    ++last;
    ++removed;
  }
  if (removed == 0) return kInvalid;
  s.mappings.erase(first, last);
  return kOk;
}

int check_mapped(uint64_t ptr, uint64_t size) {
  if (size == 0) return kInvalid;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t cur = ptr;
  const uint64_t end = ptr + size;
  auto it = s.mappings.upper_bound(cur);
  if (it == s.mappings.begin()) return kInvalid;
  --it;
  while (cur < end) {
    if (it == s.mappings.end() || it->first > cur || it->first + it->second.size <= cur) return kInvalid;
    cur = it->first + it->second.size;
    ++it;
  }
  return kOk;
}

uint64_t used_bytes(int device) {
  if (device < 0 || device >= kMaxDevices) return 0;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.used[device];
}

uint64_t occupied_bytes(int device) {
  if (device < 0 || device >= kMaxDevices) return 0;
  return used_bytes(device) + pool_kept_bytes(device) + overhead(device) + shared::others_bytes(device);
}

uint64_t process_bytes(int device) {
  if (device < 0 || device >= kMaxDevices) return 0;
  return used_bytes(device) + config().context_bytes + pool_kept_bytes(device);
}

int write_ledger(const char* path) {
  if (path == nullptr || *path == '\0') return -1;
  std::string json;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    json.reserve(64 + s.live.size() * 96);
    json += "{\"allocations\":[";
    bool first = true;
    char buf[192];
    for (const auto& kv : s.live) {
      snprintf(buf, sizeof buf, "%s{\"address\":%" PRIu64 ",\"size\":%" PRIu64 ",\"device\":%d,\"kind\":\"%s\"}",
               first ? "" : ",", kv.first, kv.second.size, kv.second.device, kind_name(kv.second.kind));
      json += buf;
      first = false;
    }
    json += "],\"live_bytes_by_device\":{";
    int ndev = config().devices;
    if (ndev < 1) ndev = 1;
    for (int d = 0; d < ndev; ++d) {
      snprintf(buf, sizeof buf, "%s\"%d\":%" PRIu64, d ? "," : "", d, s.used[d]);
      json += buf;
    }
    json += "}}\n";
  }
  std::string tmp = std::string(path) + ".tmp." + std::to_string(getpid());
  FILE* f = fopen(tmp.c_str(), "w");
  if (f == nullptr) return -1;
  const bool ok = fwrite(json.data(), 1, json.size(), f) == json.size();
  if (fclose(f) != 0 || !ok) {
    unlink(tmp.c_str());
    return -1;
  }
  if (rename(tmp.c_str(), path) != 0) {
    unlink(tmp.c_str());
    return -1;
  }
  return 0;
}

void note_loader_pid() { g_loader_pid = getpid(); }

void prereserve() {
  const Config& c = config();
  uint64_t want = c.capacity < (64ull << 30) ? c.capacity : (64ull << 30);
  want = round_up(want ? want : 1, kReserveGranule);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (int d = 0; d < c.devices; ++d) {
    const uint64_t base = kDeviceBase + (static_cast<uint64_t>(d) << 40);
    s.device_arena[d].reserve_upto(base + want);
  }
}

void write_ledger_at_exit() {
  const char* path = getenv("FAKEGPU_LEDGER");
  if (path == nullptr || *path == '\0') return;
  if (g_loader_pid != 0 && getpid() != g_loader_pid) return;  // forked child
  if (write_ledger(path) != 0) {
    fprintf(stderr, "fakegpu: could not write ledger to %s\n", path);
  }
}

}  // namespace sim
