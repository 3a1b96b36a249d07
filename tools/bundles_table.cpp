#include "tools/bundles_table.h"

#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include <rapidjson/document.h>

#include "common/bundle_keys.h"
#include "common/bundle_read_json.h"
#include "common/site_rules.h"
#include "tools/cli.h"
#include "tools/export_tables.h"
#include "tools/table_file.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {

// framework.json "roles" "bytes" (the Python hook's role census), in the
// order of the `roles_*` columns.
const char* const kRoles[kRoleCount] = {"weights",     "gradients",       "optimizer_state", "kv_cache",
                                        "activations", "allocator_cache", "unknown"};

namespace {

std::optional<int64_t> int_of(const std::string& text) {
  char* end = nullptr;
  long long v = strtoll(text.c_str(), &end, 10);
  if (text.empty() || !end || *end) return std::nullopt;
  return v;
}

// When no event carried the launcher's keys: metadata.json custom_metadata
// (set only for the variables the launcher set).
LauncherKeys launcher_keys_of(const Metadata& m) {
  LauncherKeys k;
  k.rank = m.rank.value_or(0);
  k.local_rank = k.rank;
  for (const auto& [name, value] : m.custom_metadata) {
    if (name == key::kLocalRank) k.local_rank = int_of(value).value_or(k.local_rank);
    else if (name == key::kWorldSize) k.world_size = int_of(value).value_or(1);
    else if (name == key::kJobId) k.job_id = value;
  }
  return k;
}

const rapidjson::Value* member(const rapidjson::Value& o, const char* name) {
  if (!o.IsObject()) return nullptr;
  auto it = o.FindMember(name);
  return it == o.MemberEnd() ? nullptr : &it->value;
}

std::optional<uint64_t> u64_of(const rapidjson::Value* v) {
  if (v && v->IsUint64()) return v->GetUint64();
  return std::nullopt;
}

// peak.json: {"devices": [{"device": D, "peak_bytes": N, "exact": B, ...}]}
// (the shim's high-water mark): the failing device's entry, or the highest
// peak when the bundle names no device.
void read_peak(const rapidjson::Value& d, int32_t device, BundleExtras* x) {
  const rapidjson::Value* devs = member(d, key::kDevices);
  if (!devs || !devs->IsArray()) return;
  for (const auto& e : devs->GetArray()) {
    std::optional<uint64_t> peak = u64_of(member(e, "peak_bytes"));
    const rapidjson::Value* dev = member(e, key::kDevice);
    bool mine = dev && dev->IsInt64() && dev->GetInt64() == device;
    if (!peak || !(mine || (device < 0 && (!x->peak_bytes || *peak > *x->peak_bytes)))) continue;
    x->peak_bytes = peak;
    const rapidjson::Value* exact = member(e, "exact");
    x->peak_exact = exact && exact->IsBool() ? std::optional<bool>(exact->GetBool()) : std::nullopt;
    if (mine) return;
  }
}

// framework.json: "roles": {"status": ..., "bytes": {"weights": N, ...}}.
void read_roles(const rapidjson::Value& d, BundleExtras* x) {
  const rapidjson::Value* roles = member(d, "roles");
  if (!roles || !roles->IsObject()) return;
  const rapidjson::Value* status = member(*roles, "status");
  if (status && status->IsString()) x->roles_status = status->GetString();
  const rapidjson::Value* bytes = member(*roles, "bytes");
  for (int i = 0; bytes && i < kRoleCount; ++i) x->roles[i] = u64_of(member(*bytes, kRoles[i]));
}

// An optional file: absent is fine, unreadable is said and left out.
template <typename Fn>
void read_optional(const std::string& dir, const char* name, Fn fn) {
  std::string p = read::join_path(dir, name);
  if (!read::file_exists(p)) return;
  std::vector<char> buf;
  rapidjson::Document d;
  ReadError err;
  if (!read::parse_dom(p, &buf, &d, &err) || !read::expect_object(p, d, &err)) {
    fprintf(stderr, "gpumemrec: warning: %s (its columns are left null)\n", err.message().c_str());
    return;
  }
  fn(d);
}

template <typename T>
void opt_u64(TableFile* t, const char* k, const std::optional<T>& v) {
  t->key(k);
  if (!v) t->null();
  else if constexpr (std::is_signed_v<T>) t->i64(*v);
  else t->u64(*v);
}
void opt_str(TableFile* t, const char* k, const std::optional<std::string>& v) {
  t->key(k);
  v ? t->str(*v) : t->null();
}

void write_who(const Bundle& b, const std::string& id, const LauncherKeys& who, TableFile* t) {
  t->key("tables_version");
  t->i64(kTablesVersion);
  t->key("bundle_id");
  t->str(id);
  t->key("host");
  t->str(b.hostname());
  t->key(key::kPid);
  t->i64(b.manifest.pid);
  LauncherKeys k = who.present ? who : launcher_keys_of(b.metadata);
  if (who.job_id) k.job_id = who.job_id;
  t->key(key::kRank);
  t->i64(k.rank);
  t->key(key::kLocalRank);
  t->i64(k.local_rank);
  t->key(key::kWorldSize);
  t->i64(k.world_size);
  opt_str(t, key::kJobId, k.job_id);
}

void write_failure(const Bundle& b, TableFile* t) {
  const Metadata& m = b.metadata;
  t->key(key::kReason);
  t->str(b.manifest.reason.empty() ? m.reason : b.manifest.reason);
  t->key(key::kOutcome);
  b.outcome().empty() ? t->null() : t->str(b.outcome());
  t->key(key::kBackend);
  t->str(b.manifest.backend);
  t->key("time");
  t->dbl(m.timestamp);
  t->key(key::kApi);
  t->str(m.api);
  t->key(key::kErrorName);
  t->str(m.error_name);
  t->key(key::kDeviceId);
  t->i64(m.device_id);
  t->key("asked_bytes");
  t->u64(m.requested_bytes);
  opt_u64(t, key::kDeviceFreeBytes, m.device_free_bytes);
  opt_u64(t, key::kDeviceTotalBytes, m.device_total_bytes);
  t->key(key::kLiveBytes);
  t->u64(m.live_bytes);
  t->key(key::kLiveAllocations);
  t->u64(m.live_allocations);
  auto dev = m.live_bytes_by_device.find(m.device_id);
  opt_u64(t, "live_bytes_device", dev == m.live_bytes_by_device.end() ? std::nullopt
                                                                      : std::optional<uint64_t>(dev->second));
  t->key("failing_stack_id");  // not stack_id: the bundles table joins the others by (bundle_id, stack_id)
  t->u64(m.stack_id);
  const Stack* s = b.find_stack(m.stack_id);
  const Frame* site = s ? site::site_frame_of(*s) : nullptr;
  opt_str(t, "site", site ? std::optional<std::string>(format_frame(*site)) : std::nullopt);
  opt_str(t, "library", s ? std::optional<std::string>(s->library) : std::nullopt);
  t->key(key::kEventCount);
  t->u64(b.manifest.event_count);
  t->key("recovered_count");
  t->u64(m.recovered_count);
}

// The failing device's card accounting (metadata.json device_accounting).
void write_accounting(const Bundle& b, TableFile* t) {
  const DeviceAccounting* a = nullptr;
  for (const auto& d : b.metadata.device_accounting)
    if (!a || d.device == b.metadata.device_id) a = &d;
  std::optional<uint64_t> others;
  if (a && a->other_processes) {
    others = 0;
    for (const auto& p : *a->other_processes) *others += p.used_bytes.value_or(0);
  }
  opt_u64(t, "acct_total_bytes", a ? a->total_bytes : std::nullopt);
  opt_u64(t, "acct_free_bytes", a ? a->free_bytes : std::nullopt);
  opt_u64(t, "acct_recorded_live_bytes", a ? std::optional<uint64_t>(a->recorded_live_bytes) : std::nullopt);
  opt_u64(t, "acct_process_unrecorded_bytes", a ? a->process_unrecorded_bytes : std::nullopt);
  opt_u64(t, "acct_other_processes_bytes", others);
  opt_u64(t, "acct_unaccounted_bytes", a ? a->unaccounted_bytes : std::nullopt);
}

void write_extras(const BundleExtras& x, TableFile* t) {
  opt_u64(t, "peak_bytes", x.peak_bytes);
  t->key("peak_exact");
  x.peak_exact ? t->raw(*x.peak_exact ? "true" : "false") : t->null();
  opt_str(t, "roles_status", x.roles_status);
  for (int i = 0; i < kRoleCount; ++i) opt_u64(t, (std::string("roles_") + kRoles[i]).c_str(), x.roles[i]);
}

}  // namespace

LauncherKeys launcher_keys_of(const model::read::FlatRecord& e) {
  using model::read::ScalarType;
  LauncherKeys k;
  auto num = [&](const char* name) -> std::optional<int64_t> {
    const auto* m = e.find(name);
    if (!m || m->type != ScalarType::kNumber) return std::nullopt;
    return int_of(m->text);
  };
  std::optional<int64_t> rank = num(key::kRank), world = num(key::kWorldSize);
  k.present = rank || world;
  k.rank = rank.value_or(0);
  k.local_rank = num(key::kLocalRank).value_or(k.rank);
  k.world_size = world.value_or(1);
  const auto* job = e.find(key::kJobId);
  if (job && job->type == ScalarType::kString) k.job_id = job->text;
  return k;
}

BundleExtras read_extras(const std::string& dir, const Bundle& b) {
  BundleExtras x;
  read_optional(dir, "peak.json", [&](const rapidjson::Value& d) { read_peak(d, b.metadata.device_id, &x); });
  read_optional(dir, file::kFramework, [&](const rapidjson::Value& d) { read_roles(d, &x); });
  return x;
}

void write_bundle_row(const Bundle& b, const std::string& id, const LauncherKeys& who, const BundleExtras& x,
                      TableFile* t) {
  t->begin();
  write_who(b, id, who, t);
  write_failure(b, t);
  write_accounting(b, t);
  write_extras(x, t);
  t->end();
}

}  // namespace gpumemrec::cli
