#include "shim/dump/capture/framework_report.h"

#include <new>
#include <string>

#include "common/bundle_schema.h"
#include "shim/base/spinlock.h"

namespace gpumemrec {

namespace {

SpinLock g_lock;
std::shared_ptr<const FrameworkReport> g_held;
std::shared_ptr<const FrameworkReport> g_at_exit;  // under g_lock too
std::shared_ptr<const FrameworkReport> g_latest;   // under g_lock too

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
    g_held.swap(r);
  }
  r.reset();  // the replaced report, freed outside the lock
  latest.reset();
}

std::shared_ptr<const FrameworkReport> framework_report_take(uint64_t episode) {
  std::shared_ptr<const FrameworkReport> r;
  SpinGuard g(g_lock);
  if (g_held && g_held->episode == episode) r.swap(g_held);
  return r;
}

int framework_report_device(uint64_t episode) {
  SpinGuard g(g_lock);
  return g_held && g_held->episode == episode ? int(g_held->fields.device) : -1;
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
  g_held.reset();  // (the exit digest stays: the child's exit bundle may use it)
}

}  // namespace gpumemrec
