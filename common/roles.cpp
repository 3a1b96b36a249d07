#include "common/roles.h"

#include <set>

#include "common/format.h"

namespace gpumemrec::model {

namespace {

constexpr size_t kLabelWidth = 12;

RoleRow row(const std::string& role, const char* layer, std::optional<int64_t> bytes, const std::string& name = "") {
  return RoleRow{role, layer, name, bytes};
}

std::optional<int64_t> signed_of(std::optional<uint64_t> v) {
  if (!v) return std::nullopt;
  return int64_t(*v);
}

const DeviceAccounting* accounting_of(const Bundle& b, int32_t device) {
  for (const DeviceAccounting& a : b.metadata.device_accounting)
    if (a.device == device) return &a;
  return nullptr;
}

// The framework's rows: its roles, else its allocated and cached bytes.
void add_framework_rows(const FrameworkFacts& f, RoleTable* t) {
  const FrameworkRoles* r = f.usable_roles();
  if (r) {
    t->roles_from = "framework roles (" + r->status + ")";
    for (Role role : kRoles) t->rows.push_back(row(role_key(role), "framework", int64_t(r->of(role))));
    if (r->status == "partial")
      t->notes.push_back("the framework's walk was partial (" + std::to_string(r->objects) + " objects in " +
                         std::to_string(int64_t(r->elapsed_ms)) + " ms of a " + std::to_string(r->budget_ms) +
                         " ms budget): what it did not reach is counted as unknown tensors");
    if (f.digest && f.digest->reserved_bytes && r->total() != f.digest->reserved_bytes)
      t->notes.push_back("the roles add up to " + format_bytes(r->total()) + ", PyTorch reserved " +
                         format_bytes(f.digest->reserved_bytes));
    if (!r->sharding.empty()) t->notes.push_back("sharding: " + r->sharding);
    for (const std::string& n : r->notes) t->notes.push_back("framework: " + n);
    return;
  }
  t->roles_from = "framework digest";
  const FrameworkDigest& d = *f.digest;
  const uint64_t cache = d.reserved_bytes > d.allocated_bytes ? d.reserved_bytes - d.allocated_bytes : 0;
  t->rows.push_back(row("framework_allocated", "framework", int64_t(d.allocated_bytes)));
  t->rows.push_back(row(role_key(Role::kAllocatorCache), "framework", int64_t(cache)));
  const FrameworkExtras* x = f.extras;
  if (x && x->roles && x->roles->status == "failed")
    t->notes.push_back("roles unknown: the framework's walk failed" +
                       (x->roles->notes.empty() ? std::string() : " (" + x->roles->notes.front() + ")"));
  else
    t->notes.push_back("roles unknown: framework.json has no roles (its tensors are counted as one)");
}

// The driver level: libraries (all of them without the framework's view),
// this process's unrecorded memory, other processes, free, unaccounted.
void add_driver_rows(const DeviceAccounting& a, bool framework_known, RoleTable* t) {
  for (const auto& [lib, bytes] : a.recorded_by_library) {
    if (framework_known && framework_library(lib)) continue;
    t->rows.push_back(row("library", "driver", int64_t(bytes), lib));
    if (framework_known && lib.rfind("(", 0) == 0)  // "(no stack)", "(unknown)": card_accounting.cpp
      t->notes.push_back(format_bytes(bytes) + " recorded under " + lib +
                         " may be PyTorch's own segments, which its figures above count too");
  }
  t->rows.push_back(row("context", "driver", a.process_unrecorded_bytes));
  if (a.other_processes)
    for (const GpuProcessUse& p : *a.other_processes)
      t->rows.push_back(row("other_process", "driver", signed_of(p.used_bytes),
                            "pid " + std::to_string(p.pid) + (p.name.empty() ? "" : " " + p.name)));
  else
    t->rows.push_back(row("other_process", "driver", std::nullopt));
  t->rows.push_back(row("free", "driver", signed_of(a.free_bytes)));
  t->rows.push_back(row("unaccounted", "driver", a.unaccounted_bytes));
  if (!a.note.empty()) t->notes.push_back(a.note);
}

RoleTable table_for(const Bundle& b, const FrameworkFacts& f, int32_t device) {
  RoleTable t;
  t.device = device;
  const DeviceAccounting* a = accounting_of(b, device);
  if (a) t.total_bytes = a->total_bytes;
  const bool framework_known = f.digest && f.digest->framework == "torch" && f.device() == device;
  if (framework_known) add_framework_rows(f, &t);
  else t.roles_from = "driver only";
  if (a) add_driver_rows(*a, framework_known, &t);
  if (!framework_known)
    t.notes.push_back(f.digest ? "roles unknown on this device: the framework's digest is about device " +
                                     std::to_string(f.device())
                               : "roles unknown: no framework digest (framework.json); only what the driver level "
                                 "tells (libraries, this process's context, other processes)");
  return t;
}

}  // namespace

const FrameworkRoles* FrameworkFacts::usable_roles() const {
  if (!extras || !extras->roles) return nullptr;
  const FrameworkRoles& r = *extras->roles;
  return r.status == "complete" || r.status == "partial" ? &r : nullptr;
}

int64_t FrameworkFacts::device() const {
  const FrameworkRoles* r = usable_roles();
  if (r && r->device >= 0) return r->device;
  return digest ? digest->device : -1;
}

bool framework_library(const std::string& library) {
  return library.rfind("libc10", 0) == 0 || library.rfind("libtorch", 0) == 0;
}

std::vector<RoleTable> role_tables(const Bundle& b, const FrameworkFacts& f) {
  std::set<int32_t> devices;
  for (const DeviceAccounting& a : b.metadata.device_accounting) devices.insert(a.device);
  if (f.digest && f.digest->framework == "torch" && f.device() >= 0) devices.insert(int32_t(f.device()));
  std::vector<RoleTable> out;
  for (int32_t d : devices) out.push_back(table_for(b, f, d));
  return out;
}

std::string role_row_label(const RoleRow& r) {
  for (Role role : kRoles)
    if (r.role == role_key(role)) return role_label(role);
  if (r.role == "framework_allocated") return "PyTorch tensors (roles unknown)";
  if (r.role == "library") return "library " + r.name;
  if (r.role == "context") return "this process, not recorded (CUDA context, modules, graph pools)";
  if (r.role == "other_process") return r.name.empty() ? "other processes (NVML did not answer)" : r.name;
  if (r.role == "unaccounted") return "unaccounted (driver reservations, processes NVML does not show)";
  return r.role;
}

std::vector<std::string> role_lines(const RoleTable& t) {
  std::vector<std::string> out;
  out.push_back("Memory by role on device " + std::to_string(t.device) +
                (t.total_bytes ? " (of " + format_bytes(*t.total_bytes) + ")" : std::string()) + ", " +
                t.roles_from + ":");
  for (const RoleRow& r : t.rows) {
    std::string amount = !r.bytes ? "?"
                         : *r.bytes < 0 ? "-" + format_bytes(uint64_t(-(*r.bytes + 1)) + 1)
                                        : format_bytes(uint64_t(*r.bytes));
    if (amount.size() < kLabelWidth) amount.insert(0, kLabelWidth - amount.size(), ' ');
    out.push_back("  " + amount + "  " + (r.layer == "framework" ? "[framework] " : "[driver]    ") +
                  role_row_label(r));
  }
  for (const std::string& n : t.notes) out.push_back("  (" + n + ")");
  return out;
}

}  // namespace gpumemrec::model
