#include "shim/dump/capture/framework_report.h"

#include <new>
#include <string>

#include "common/bundle_schema.h"
#include "shim/base/spinlock.h"

namespace gpumemrec {

namespace {

SpinLock g_lock;
// A few reports at a time, one per episode: a trainer that catches the error
// and retries at once reports the next episode's while the writer may not
// have taken the last one yet (simulate.trainer_accelerate_find).
constexpr size_t kHeld = 4;
std::shared_ptr<const FrameworkReport> g_held[kHeld];
size_t g_next = 0;                                 // the slot replaced when all hold one
std::shared_ptr<const FrameworkReport> g_at_exit;  // under g_lock too
std::shared_ptr<const FrameworkReport> g_latest;   // under g_lock too

// The slot of `episode`'s report, kHeld when none. Under g_lock.
size_t slot_of(uint64_t episode) {
  for (size_t i = 0; i < kHeld; ++i)
    if (g_held[i] && g_held[i]->episode == episode) return i;
  return kHeld;
}

}  // namespace

bool framework_state_name_ok(const std::string& name) {
  return name == file::kFrameworkState || name == file::kFrameworkMemoryProfile;
}

std::shared_ptr<FrameworkReport> framework_report_from_digest(const char* digest, size_t len, size_t max_bytes,
                                                              std::string* why) {
  if (!digest || len == 0 || len > max_bytes) {
    *why = "no digest, or one over " + std::to_string(max_bytes >> 20) + " MiB";
    return nullptr;
  }
  auto r = std::make_shared<FrameworkReport>();
  if (!parse_framework_digest(digest, len, &r->fields, why)) return nullptr;
  r->digest.assign(digest, len);
  return r;
}

void framework_report_put(std::shared_ptr<const FrameworkReport> r) {
  std::shared_ptr<const FrameworkReport> latest = r;
  {
    SpinGuard g(g_lock);
    g_latest.swap(latest);
    size_t i = slot_of(r ? r->episode : 0);
    for (size_t j = 0; i == kHeld && j < kHeld; ++j)
      if (!g_held[j]) i = j;
    if (i == kHeld) i = g_next++ % kHeld;  // all held: each slot in turn
    g_held[i].swap(r);
  }
  r.reset();  // the replaced report, freed outside the lock
  latest.reset();
}

std::shared_ptr<const FrameworkReport> framework_report_take(uint64_t episode) {
  std::shared_ptr<const FrameworkReport> r;
  SpinGuard g(g_lock);
  const size_t i = slot_of(episode);
  if (i < kHeld) r.swap(g_held[i]);
  return r;
}

int framework_report_device(uint64_t episode) {
  SpinGuard g(g_lock);
  const size_t i = slot_of(episode);
  return i < kHeld ? int(g_held[i]->fields.device) : -1;
}

void framework_exit_put(std::shared_ptr<const FrameworkReport> r) {
  std::shared_ptr<const FrameworkReport> latest = r;
  {
    SpinGuard g(g_lock);
    g_latest.swap(latest);
    g_at_exit.swap(r);
  }
  r.reset();  // the replaced one, freed outside the lock
  latest.reset();
}

std::shared_ptr<const FrameworkReport> framework_report_latest() {
  SpinGuard g(g_lock);
  return g_latest;
}

std::shared_ptr<const FrameworkReport> framework_exit_get() {
  SpinGuard g(g_lock);
  return g_at_exit;
}

void framework_report_atfork_child() {
  // A report belongs to the parent's bundle; the lock may have been held by
  // a thread that does not exist here.
  new (&g_lock) SpinLock();
  for (auto& h : g_held) h.reset();  // (the exit digest stays: the child's exit bundle may use it)
}

}  // namespace gpumemrec
