#include "shim/dump/capture/peak_roles.h"

#include "common/framework_roles.h"

namespace gpumemrec {

namespace {

uint64_t to_wall(uint64_t mono_ns, const FrozenState& frozen) { return uint64_t(int64_t(mono_ns) + frozen.wall_offset_ns); }

// Why the walk is not a moment of the device's peak, or "".
std::string why_not_at_peak(const FrameworkRoles& roles, uint64_t w0, uint64_t w1, uint64_t cut,
                            const PeakDevice& p) {
  if (roles.status == "failed") return "the walk named nothing (its status is failed)";
  if (w1 > cut) return "the walk ended after the bundle's cut (an out-of-memory's walk runs after the allocator "
                       "freed its cache to retry)";
  if (!p.stretch_known) return "when the peak held is not known exactly (the peak is not exact)";
  if (w0 < p.peak_time_ns) return "the walk ran before the peak was reached";
  if (p.until_ns && w1 >= p.until_ns)
    return "the walk ran after the peak ended (peak_until_ns: the device's total fell below it before the walk "
           "was done)";
  if (roles.total() > p.peak_bytes) return "the framework's roles hold more than the peak";
  return "";
}

}  // namespace

void add_peak_roles(const FrameworkReport* fw, const FrozenState& frozen, PeakReport* out) {
  if (!fw) return;
  const FrameworkExtras x = parse_framework_extras(fw->digest.data(), fw->digest.size());
  if (!x.roles || !x.snapshot_mono_ns || !x.done_mono_ns) return;  // a hook without the walk's moment
  PeakDevice* p = nullptr;
  for (PeakDevice& d : out->devices)
    if (d.device == fw->fields.device) p = &d;
  if (!p) return;
  PeakRoles r;
  r.framework = fw->fields.framework;
  r.walk = x.at.empty() ? "oom" : x.at;
  r.walk_status = x.roles->status;
  r.walk_time_ns = to_wall(*x.snapshot_mono_ns, frozen);
  r.why_not_known = why_not_at_peak(*x.roles, r.walk_time_ns, to_wall(*x.done_mono_ns, frozen),
                                    to_wall(frozen.cut_ns, frozen), *p);
  r.known = r.why_not_known.empty();
  if (r.known) {
    for (Role role : kRoles) r.bytes.emplace_back(role_key(role), x.roles->of(role));
    r.bytes.emplace_back("outside_framework", p->peak_bytes - x.roles->total());
  }
  p->roles = std::move(r);
}

}  // namespace gpumemrec
