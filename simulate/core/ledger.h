// The device memory ledger of a simulated driver (libcuda.so.1, and the test
// suite's libamdhip64.so.6): address arenas, live allocations, VMM handles and
// mappings, stream-ordered pools, and the JSON ledger tests read.
//
// Linked as a static, hidden-visibility library into each driver library, so
// each has its OWN ledger (two drivers loaded in one process never share
// state, exactly like two real drivers would not). Nothing here is exported;
// the public surface is the driver API plus a handful of extern "C"
// fakegpu_* helpers the tests and the other simulated libraries use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/config.h"

namespace sim {

enum class Kind { Device = 0, Managed = 1, Physical = 2 };

// Result codes of the core. The numeric values of the first three are the
// same as the driver codes (0 success, 1 invalid value, 2 out of memory) so a
// caller may return them unchanged; the rest must be mapped.
enum Rc : int {
  kOk = 0,
  kInvalid = 1,
  kOom = 2,
  kBadDevice = 3,  // device index out of range
};

constexpr uint64_t kGranularity = 2ull << 20;  // VMM granularity, 2 MiB
constexpr uint64_t kAlign = 256;               // every allocation address

// Address ranges.
//   device d allocations (device + managed): [0x100000000000 + (d << 40), + 1 TiB)
//   32-bit (legacy cuMemAlloc v1) arena:     [0x00100000, 0xfff00000)
//   VA reservations (cuMemAddressReserve):   [0x300000000000, + 16 TiB)
//   physical handles (cuMemCreate):          0x500000000000 + n * 0x1000
constexpr uint64_t kDeviceBase = 0x100000000000ull;  // 16 TiB: below the mmap area, above PIE and heap
constexpr uint64_t kDeviceSpan = 1ull << 40;
constexpr uint64_t kV1Base = 0x00100000ull;
constexpr uint64_t kV1End = 0xfff00000ull;
constexpr uint64_t kVaBase = 0x300000000000ull;
constexpr uint64_t kVaSpan = 1ull << 44;
constexpr uint64_t kHandleBase = 0x500000000000ull;

// True for an address in a device arena or a VA reservation: device memory
// (host mappings never land there: the arenas reserve what they hand out).
inline bool is_device_address(uint64_t a) { return a >= kDeviceBase && a < kVaBase + kVaSpan; }

// Allocates `size` bytes (size > 0) on `device`. `align` must be a power of
// two >= 256 (0 means 256). `v1_arena` places the allocation in the 32-bit
// range. Returns kOk / kOom / kBadDevice / kInvalid.
int alloc(int device, uint64_t size, Kind kind, uint64_t align, bool v1_arena, uint64_t* out);

// Frees an allocation made with alloc() by its exact start address.
// Returns kOk or kInvalid (unknown address or double free). addr must be != 0.
int free_ptr(uint64_t addr);

// Stream-ordered frees (cuMemFreeAsync): the allocation is gone, but its
// bytes stay with the process's pool until a synchronization or a trim gives
// them back (CUDA's default release threshold is 0: "memory is released at
// synchronization"), so NVML still counts them (process_bytes); an async
// allocation takes from them first. Seen on an H200 (PyTorch's
// cudaMallocAsync backend freeing 139 GiB left NVML's figure unchanged).
// They are not free either (occupied_bytes): the pool holds them.
int free_to_pool(uint64_t addr);
// A stream-ordered allocation (cuMemAllocAsync): as alloc(), taking first
// from what the device's pool keeps.
int alloc_from_pool(int device, uint64_t size, uint64_t* out);
// At a synchronization: each device's pool keeps at most its release
// threshold (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 0 by default; PyTorch's
// cudaMallocAsync backend sets it to UINT64_MAX).
void pool_release_all();
void pool_trim(int device, uint64_t keep);  // cuMemPoolTrimTo
uint64_t pool_kept_bytes(int device);
// What cuMemPoolGetAttribute reports of a device's pool.
struct PoolStats {
  uint64_t reserved, reserved_high, used, used_high, threshold;
};
PoolStats pool_stats(int device);
enum class PoolField { Threshold, ReservedHigh, UsedHigh };  // the high marks are reset to the current value
void pool_set(int device, PoolField field, uint64_t value);

// A primary context destroyed (cuDevicePrimaryCtxReset, the last
// cuDevicePrimaryCtxRelease, cudaDeviceReset, hipDeviceReset): every
// allocation, physical handle and mapping of `device` is gone, and its pool
// keeps nothing. Returns the number of allocations and handles freed.
int reset_device(int device);

// True if addr is the start of a live alloc()/create_physical() entry.
bool is_live(uint64_t addr);

// The allocation or mapping holding addr (interior addresses too).
struct Found {
  uint64_t start;  // the allocation's address, or the mapping's
  uint64_t size;   // its accounted size (a mapping: its length)
  int device;
  Kind kind;       // Device, Managed, or Physical for a mapped VA range
  uint64_t handle; // a mapping's physical handle (0 otherwise)
};
bool find(uint64_t addr, Found* out);
// The device of a live physical handle (cuMemCreate), or -1.
int physical_device(uint64_t handle);

// VMM. Physical handles count against capacity; VA does not.
int create_physical(int device, uint64_t size, uint64_t* handle);
int release_physical(uint64_t handle);
int reserve_va(uint64_t size, uint64_t align, uint64_t hint, uint64_t* out);
int free_va(uint64_t ptr, uint64_t size);
int map(uint64_t ptr, uint64_t size, uint64_t offset, uint64_t handle);
int unmap(uint64_t ptr, uint64_t size);
int check_mapped(uint64_t ptr, uint64_t size);

// The device's primary context was made (the driver's mark_active): from now
// on the run's other processes count its context bytes on that device
// (core/shared_ledger.h); reset_device() ends it.
void note_context(int device);

// Accounting.
uint64_t used_bytes(int device);
// Bytes of the device not free: this process's allocations, its context
// (FAKEGPU_CONTEXT_BYTES), other processes' memory (FAKEGPU_OTHERS_BYTES) and
// what the run's other processes hold on it (core/shared_ledger.h).
uint64_t occupied_bytes(int device);
// What NVML reports for this process: its allocations, its context and
// what its pools keep.
uint64_t process_bytes(int device);

// Writes the ledger JSON; returns 0 on success, -1 on error.
int write_ledger(const char* path);

// Writes the ledger to $FAKEGPU_LEDGER if set (only from the process that
// loaded the library, never from a forked child). Call from a destructor.
void write_ledger_at_exit();

// Records the pid of the loading process (call from a constructor).
void note_loader_pid();

// Reserves the head of each device's address range (up to its capacity, at
// most 64 GiB) now, before the program makes its own host mappings. Call
// from the library constructor.
void prereserve();

}  // namespace sim
