// Kept small copies into device memory (kept_bytes.h). Lines of 256 bytes in
// an ordered map under one mutex: copies are host API calls, not a hot path;
// only kernel_ran() is called per launch, and it takes no lock when nothing
// is kept.
#include "runtime/kept_bytes.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace rt {
namespace kept {
namespace {

constexpr uintptr_t kLine = 256;
struct Line {
  unsigned char b[kLine];
};

std::mutex g_mu;
std::map<uintptr_t, Line>* g_lines = new std::map<uintptr_t, Line>();  // never destroyed: used at exit
std::atomic<size_t> g_count{0};                                        // lines in g_lines

uintptr_t line_of(uintptr_t a) { return a & ~(kLine - 1); }

// Calls f(line start, offset in line, bytes, position in the range) for each
// piece of [dev, dev + n) that lies in one line.
template <class F>
void each_piece(uintptr_t dev, size_t n, F f) {
  for (size_t done = 0; done < n;) {
    const uintptr_t a = dev + done, start = line_of(a);
    const size_t off = a - start, len = std::min<size_t>(kLine - off, n - done);
    f(start, off, len, done);
    done += len;
  }
}

// Under g_mu: the range's kept bytes become zeros; whole lines are dropped.
void forget_locked(uintptr_t dev, size_t n) {
  auto it = g_lines->lower_bound(line_of(dev));
  while (it != g_lines->end() && it->first < dev + n) {
    const uintptr_t lo = std::max(dev, it->first), hi = std::min<uintptr_t>(dev + n, it->first + kLine);
    if (lo == it->first && hi == it->first + kLine) {
      it = g_lines->erase(it);
      continue;
    }
    memset(it->second.b + (lo - it->first), 0, hi - lo);
    ++it;
  }
  g_count.store(g_lines->size(), std::memory_order_relaxed);
}

// Under g_mu: whether the range fits within the total with its new lines.
bool fits_locked(uintptr_t dev, size_t n) {
  if (n > kMaxCopy) return false;
  size_t added = 0;
  for (uintptr_t l = line_of(dev); l < dev + n; l += kLine) added += g_lines->count(l) == 0;
  return (g_lines->size() + added) * kLine <= kMaxTotal;
}

// Under g_mu: stores the range's bytes, from src or, with src null, the value.
void store_locked(uintptr_t dev, const unsigned char* src, unsigned char value, size_t n) {
  if (!fits_locked(dev, n)) return forget_locked(dev, n);
  each_piece(dev, n, [&](uintptr_t line, size_t off, size_t len, size_t pos) {
    auto ins = g_lines->try_emplace(line);
    if (ins.second) memset(ins.first->second.b, 0, kLine);
    if (src != nullptr)
      memcpy(ins.first->second.b + off, src + pos, len);
    else
      memset(ins.first->second.b + off, value, len);
  });
  g_count.store(g_lines->size(), std::memory_order_relaxed);
}

// Under g_mu: zeros with the kept bytes of the range laid over them.
void read_locked(unsigned char* dst, uintptr_t dev, size_t n) {
  memset(dst, 0, n);
  for (auto it = g_lines->lower_bound(line_of(dev)); it != g_lines->end() && it->first < dev + n; ++it) {
    const uintptr_t lo = std::max(dev, it->first), hi = std::min<uintptr_t>(dev + n, it->first + kLine);
    memcpy(dst + (lo - dev), it->second.b + (lo - it->first), hi - lo);
  }
}

}  // namespace

void write(uintptr_t dev, const void* src, size_t n) {
  if (n > kMaxCopy) return forget(dev, n);
  std::lock_guard<std::mutex> lock(g_mu);
  store_locked(dev, static_cast<const unsigned char*>(src), 0, n);
}

void fill(uintptr_t dev, unsigned char value, size_t n) {
  if (n > kMaxCopy) return forget(dev, n);
  std::lock_guard<std::mutex> lock(g_mu);
  store_locked(dev, nullptr, value, n);
}

bool empty() { return g_count.load(std::memory_order_relaxed) == 0; }

void read(void* dst, uintptr_t dev, size_t n) {
  if (empty()) {
    memset(dst, 0, n);
    return;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  read_locked(static_cast<unsigned char*>(dst), dev, n);
}

void copy(uintptr_t dst, uintptr_t src, size_t n) {
  if (n > kMaxCopy || empty()) return forget(dst, n);
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<unsigned char> tmp(n);
  read_locked(tmp.data(), src, n);
  store_locked(dst, tmp.data(), 0, n);
}

void forget(uintptr_t dev, size_t n) {
  if (empty()) return;
  std::lock_guard<std::mutex> lock(g_mu);
  forget_locked(dev, n);
}

void kernel_ran() {
  if (empty()) return;
  std::lock_guard<std::mutex> lock(g_mu);
  g_lines->clear();
  g_count.store(0, std::memory_order_relaxed);
}

size_t kept_bytes() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_lines->size() * kLine;
}

}  // namespace kept
}  // namespace rt

// For the simulated NCCL (simulate/nccl/symmetric_data.h), which finds them
// with dlsym: a collective's result in small buffers.
extern "C" __attribute__((visibility("default"))) int gpumemrec_simulated_kept_empty(void) {
  return rt::kept::empty() ? 1 : 0;
}

extern "C" __attribute__((visibility("default"))) void gpumemrec_simulated_kept_read(void* dst, uintptr_t dev,
                                                                                     size_t n) {
  rt::kept::read(dst, dev, n);
}

// src null: the range reads as zeros from now on.
extern "C" __attribute__((visibility("default"))) void gpumemrec_simulated_kept_write(uintptr_t dev, const void* src,
                                                                                      size_t n) {
  if (src == nullptr)
    rt::kept::forget(dev, n);
  else
    rt::kept::write(dev, src, n);
}
