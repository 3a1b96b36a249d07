// What small copies put into device memory, read back by copies out until a
// kernel runs (docs/simulate.md, "What device memory holds").
//
// Device memory is address space: most copies into it are dropped and copies
// out give zeros. But programs write small control data to the device and
// read it back with no kernel in between, and decide on what they read: DDP
// at start-up copies every parameter's shape in, broadcasts it and reads it
// back (torch/csrc/distributed/c10d/comm.cpp, verify_params_across_processes),
// and its reducer does the same with its bucket indices (reducer.cpp,
// sync_bucket_indices). So a copy (or fill) of at most kMaxCopy bytes into
// device memory is kept, at most kMaxTotal bytes in all, and copies out and
// between device buffers see it. A kernel launch forgets everything kept:
// the kernel would have changed memory the simulation cannot follow, and a
// later reader (a caching allocator's block reused for a kernel's output)
// must not see stale bytes where a real card has the kernel's result: zeros
// are the simulation's answer for those, as before.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rt {
namespace kept {

constexpr size_t kMaxCopy = 64 << 10;   // a copy or fill up to this size is kept
constexpr size_t kMaxTotal = 16 << 20;  // what one process keeps, at most

// A copy of n bytes from host memory into device address dev: kept when small
// and within the total, else the range reads as zeros from now on.
void write(uintptr_t dev, const void* src, size_t n);
// A fill of n bytes with the byte value (cudaMemset).
void fill(uintptr_t dev, unsigned char value, size_t n);
// A copy out: zeros, with what is kept in the range laid over them.
void read(void* dst, uintptr_t dev, size_t n);
// A copy between device addresses.
void copy(uintptr_t dst, uintptr_t src, size_t n);
// The range reads as zeros (freed memory).
void forget(uintptr_t dev, size_t n);
// A kernel was launched: nothing kept stays. One relaxed load when nothing is
// kept (the common case: every launch calls this).
void kernel_ran();
// Nothing is kept (one relaxed load).
bool empty();
// Bytes kept now (tests).
size_t kept_bytes();

}  // namespace kept
}  // namespace rt
