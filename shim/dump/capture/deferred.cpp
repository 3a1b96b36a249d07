#include "shim/dump/capture/deferred.h"

#include <sched.h>

namespace gpumemrec {

void DeferredFailures::write(int slot, const DeferredFailure& d) {
  try {
    records_[slot] = d;
  } catch (...) {  // the device list could not be copied: the record without it
    records_[slot].failure = d.failure;
    records_[slot].episode = d.episode;
    records_[slot].requeued = 0;
    records_[slot].devices = DeviceReport{};
  }
  state_[slot].store(kQueued, std::memory_order_release);
}

bool DeferredFailures::claim(int slot, int from) {
  return state_[slot].compare_exchange_strong(from, kFilling, std::memory_order_acq_rel);
}

DeferredFailures::Put DeferredFailures::put(const DeferredFailure& d, bool (*replaceable)(uint64_t)) {
  Put p;
  for (int i = 0; i < kSlots; ++i)
    if (claim(i, kFree)) {
      write(i, d);
      p.slot = i;
      return p;
    }
  for (int i = 0; i < kSlots && replaceable; ++i) {
    // Claimed first, read after: between a read and the claim the writer
    // could have run the record and another failure refilled the slot.
    if (!claim(i, kQueued)) continue;
    const uint64_t old = records_[i].episode;
    if (!replaceable(old)) {
      state_[i].store(kQueued, std::memory_order_release);
      continue;
    }
    write(i, d);
    p.slot = i;
    p.replaced = true;
    p.evicted = old;
    return p;
  }
  return p;
}

DeferredFailure* DeferredFailures::take(int slot) {
  for (;;) {
    int expected = kQueued;
    if (state_[slot].compare_exchange_weak(expected, kRunning, std::memory_order_acq_rel))
      return &records_[slot];
    if (expected == kFree || expected == kRunning) return nullptr;  // no record posted (cannot happen)
    sched_yield();  // a failing thread is filling it (a copy and a driver query)
  }
}

void DeferredFailures::requeue(int slot) {
  records_[slot].requeued++;
  state_[slot].store(kQueued, std::memory_order_release);
}

void DeferredFailures::done(int slot) { state_[slot].store(kFree, std::memory_order_release); }

void DeferredFailures::reset() {
  for (auto& s : state_) s.store(kFree, std::memory_order_relaxed);
}

}  // namespace gpumemrec
