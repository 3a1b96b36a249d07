#include "shim/dump/capture/framework_report.h"

#include <new>

#include "common/bundle_schema.h"
#include "shim/base/spinlock.h"

namespace gpumemrec {

namespace {

SpinLock g_lock;
std::shared_ptr<const FrameworkReport> g_held;

}  // namespace

bool framework_state_name_ok(const std::string& name) {
  return name == file::kFrameworkState || name == file::kFrameworkMemoryProfile;
}

void framework_report_put(std::shared_ptr<const FrameworkReport> r) {
  {
    SpinGuard g(g_lock);
    g_held.swap(r);
  }
  r.reset();  // the replaced report, freed outside the lock
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

void framework_report_atfork_child() {
  // A report belongs to the parent's bundle; the lock may have been held by
  // a thread that does not exist here.
  new (&g_lock) SpinLock();
  g_held.reset();
}

}  // namespace gpumemrec
