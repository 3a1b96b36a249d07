#include "common/framework_roles.h"

#include <rapidjson/document.h>

namespace gpumemrec {

namespace {

constexpr size_t kMaxText = 256;
constexpr size_t kMaxTop = 64;
constexpr size_t kMaxNotes = 16;

// The keys this file reads (framework.json, docs/bundle-format.md).
constexpr const char* kRolesKey = "roles";
constexpr const char* kRoleKeys[kRoleCount] = {"weights",     "gradients",       "optimizer_state", "kv_cache",
                                              "activations", "allocator_cache", "unknown"};
constexpr const char* kRoleLabels[kRoleCount] = {"weights",     "gradients",       "optimizer state",
                                                "KV cache",    "activations",     "allocator cache",
                                                "unknown tensors"};

using Value = rapidjson::Value;

const Value* member(const Value& o, const char* key) {
  auto it = o.FindMember(key);
  return it == o.MemberEnd() ? nullptr : &it->value;
}

std::string clipped(const Value& v) {
  std::string s(v.GetString(), v.GetStringLength());
  return s.size() > kMaxText ? s.substr(0, kMaxText) : s;
}

// A size: a non-negative integer. False and *why otherwise.
bool size_of(const Value* v, const std::string& where, uint64_t* out, std::string* why) {
  if (!v) {
    *why = where + " is missing";
    return false;
  }
  if (v->IsUint64()) {
    *out = v->GetUint64();
    return true;
  }
  *why = where + (v->IsNumber() ? " is not a non-negative integer" : " is not a number");
  return false;
}

bool read_bytes(const Value& roles, FrameworkRoles* r, std::string* why) {
  const Value* bytes = member(roles, "bytes");
  if (!bytes || !bytes->IsObject()) {
    *why = "roles.bytes is missing or not an object";
    return false;
  }
  for (size_t i = 0; i < kRoleCount; ++i)
    if (!size_of(member(*bytes, kRoleKeys[i]), std::string("roles.bytes.") + kRoleKeys[i], &r->bytes[i], why))
      return false;
  const Value* tensors = member(roles, "tensors");
  if (!tensors) return true;
  if (!tensors->IsObject()) {
    *why = "roles.tensors is not an object";
    return false;
  }
  for (size_t i = 0; i < kRoleCount; ++i) {
    const Value* t = member(*tensors, kRoleKeys[i]);
    uint64_t n = 0;
    if (!t) continue;
    if (!size_of(t, std::string("roles.tensors.") + kRoleKeys[i], &n, why)) return false;
    r->tensors[i] = n;
  }
  return true;
}

void read_top(const Value& roles, FrameworkRoles* r) {
  const Value* top = member(roles, "top");
  if (!top || !top->IsArray()) return;
  for (const Value& t : top->GetArray()) {
    if (r->top.size() >= kMaxTop) break;
    if (!t.IsObject()) continue;
    RoleTop x;
    const Value* v = member(t, "role");
    if (v && v->IsString()) x.role = clipped(*v);
    if ((v = member(t, "owner")) && v->IsString()) x.owner = clipped(*v);
    if ((v = member(t, "name")) && v->IsString()) x.name = clipped(*v);
    if ((v = member(t, "bytes")) && v->IsUint64()) x.bytes = v->GetUint64();
    r->top.push_back(std::move(x));
  }
}

void read_scalars(const Value& roles, FrameworkRoles* r) {
  const Value* v = member(roles, "elapsed_ms");
  if (v && v->IsNumber()) r->elapsed_ms = v->GetDouble();
  if ((v = member(roles, "objects")) && v->IsUint64()) r->objects = v->GetUint64();
  if ((v = member(roles, "budget_ms")) && v->IsInt64()) r->budget_ms = v->GetInt64();
  if ((v = member(roles, "device")) && v->IsInt64()) r->device = v->GetInt64();
  if ((v = member(roles, "sharding")) && v->IsString()) r->sharding = clipped(*v);
  if ((v = member(roles, "notes")) && v->IsArray())
    for (const Value& n : v->GetArray())
      if (n.IsString() && r->notes.size() < kMaxNotes) r->notes.push_back(clipped(n));
}

void read_roles(const Value& d, FrameworkExtras* out) {
  const Value* roles = member(d, kRolesKey);
  if (!roles || roles->IsNull()) return;
  if (!roles->IsObject()) {
    out->problem = "roles is not an object";
    return;
  }
  FrameworkRoles r;
  const Value* status = member(*roles, "status");
  if (status && status->IsString()) r.status = clipped(*status);
  if (r.status != "complete" && r.status != "partial" && r.status != "failed") {
    out->problem = "roles.status is not complete, partial or failed";
    return;
  }
  std::string why;
  if (!read_bytes(*roles, &r, &why)) {
    out->problem = why;
    return;
  }
  read_scalars(*roles, &r);
  read_top(*roles, &r);
  out->roles = std::move(r);
}

void read_optional_size(const Value& d, const char* key, std::optional<uint64_t>* out, std::string* problem) {
  const Value* v = member(d, key);
  if (!v || v->IsNull()) return;
  std::string why;
  uint64_t n = 0;
  if (size_of(v, key, &n, &why)) *out = n;
  else if (problem->empty()) *problem = why;
}

}  // namespace

const char* role_key(Role r) { return kRoleKeys[size_t(r)]; }
const char* role_label(Role r) { return kRoleLabels[size_t(r)]; }

uint64_t FrameworkRoles::total() const {
  uint64_t t = 0;
  for (uint64_t b : bytes) t += b;
  return t;
}

FrameworkExtras parse_framework_extras(const char* json, size_t len) {
  FrameworkExtras out;
  rapidjson::Document d;
  d.Parse<rapidjson::kParseStopWhenDoneFlag | rapidjson::kParseIterativeFlag>(json, len);
  if (d.HasParseError() || !d.IsObject()) return out;  // the digest's reader says so
  read_roles(d, &out);
  const Value* v = member(d, "memory_fraction");
  if (v && v->IsNumber() && v->GetDouble() > 0) out.memory_fraction = v->GetDouble();
  else if (v && !v->IsNull() && out.problem.empty()) out.problem = "memory_fraction is not a positive number";
  if ((v = member(d, "expandable_segments")) && v->IsBool()) out.expandable_segments = v->GetBool();
  if ((v = member(d, "at")) && v->IsString()) out.at = clipped(*v);
  if ((v = member(d, "allocator_backend")) && v->IsString()) out.allocator_backend = clipped(*v);
  read_optional_size(d, "torch_peak_allocated", &out.torch_peak_allocated, &out.problem);
  read_optional_size(d, "torch_peak_reserved", &out.torch_peak_reserved, &out.problem);
  read_optional_size(d, "snapshot_mono_ns", &out.snapshot_mono_ns, &out.problem);
  read_optional_size(d, "done_mono_ns", &out.done_mono_ns, &out.problem);
  return out;
}

}  // namespace gpumemrec
