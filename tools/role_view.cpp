#include "tools/role_view.h"

#include <algorithm>
#include <set>

#include "common/format.h"
#include "tools/cli.h"

namespace gpumemrec::cli {

namespace {

constexpr size_t kTopTensors = 5;  // of roles.top, in the text report

model::FrameworkFacts facts_of(const FrameworkView& v) {
  model::FrameworkFacts f;
  if (v.present) f.digest = &v.d, f.extras = &v.x;
  return f;
}

void json_framework_roles(JsonWriter& w, const FrameworkRoles& r) {
  w.StartObject();
  json_kv(w, "status", r.status);
  json_kv(w, "elapsed_ms", r.elapsed_ms);
  json_kv(w, "objects", r.objects);
  json_kv(w, "budget_ms", r.budget_ms);
  json_kv(w, "device", r.device);
  json_kv_or_null(w, "sharding", r.sharding);
  w.Key("bytes");
  w.StartObject();
  for (Role role : kRoles) json_kv(w, role_key(role), r.of(role));
  w.EndObject();
  w.Key("tensors");
  w.StartObject();
  for (Role role : kRoles)
    if (r.tensors[size_t(role)]) json_kv(w, role_key(role), *r.tensors[size_t(role)]);
  w.EndObject();
  w.Key("top");
  w.StartArray();
  for (const RoleTop& t : r.top) {
    w.StartObject();
    json_kv(w, "role", t.role);
    json_kv(w, "owner", t.owner);
    json_kv(w, "name", t.name);
    json_kv(w, "bytes", t.bytes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("notes");
  w.StartArray();
  for (const std::string& n : r.notes) w.String(n.c_str());
  w.EndArray();
  w.EndObject();
}

void json_table(JsonWriter& w, const model::RoleTable& t) {
  w.StartObject();
  json_kv(w, "device", int64_t(t.device));
  json_kv(w, "total_bytes", t.total_bytes);
  json_kv(w, "roles_from", t.roles_from);
  w.Key("rows");
  w.StartArray();
  for (const model::RoleRow& r : t.rows) {
    w.StartObject();
    json_kv(w, "role", r.role);
    json_kv(w, "layer", r.layer);
    json_kv_or_null(w, "name", r.name);
    json_kv(w, "label", model::role_row_label(r));
    json_kv(w, "bytes", r.bytes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("notes");
  w.StartArray();
  for (const std::string& n : t.notes) w.String(n.c_str());
  w.EndArray();
  w.EndObject();
}

std::set<std::string> all_keys(const RoleTotals& o, const RoleTotals& n) {
  std::set<std::string> keys;
  for (const auto& kv : o) keys.insert(kv.first);
  for (const auto& kv : n) keys.insert(kv.first);
  return keys;
}

std::string role_key_of(const model::RoleRow& r) { return r.name.empty() ? r.role : r.role + " " + r.name; }

}  // namespace

BundleInsight read_insight(const model::Bundle& b) {
  BundleInsight in;
  in.fw = read_framework_view(b.path);
  in.peak = model::read_peak(b.path);
  const model::FrameworkFacts f = facts_of(in.fw);
  in.roles = model::role_tables(b, f);
  model::AdviceInput ai;
  ai.framework = f;
  model::limit_from_environment(b, b.metadata.device_id, &ai);
  in.advice = model::advise(b, ai);
  return in;
}

std::string roles_text(const BundleInsight& in) {
  std::string out;
  if (in.fw.present && !in.fw.x.problem.empty())
    out += "\nframework.json: " + in.fw.x.problem + " (roles left out; the rest of the report stands)\n";
  if (in.roles.empty())
    return out + "\nMemory by role: unknown (no framework digest and no card accounting in this bundle)\n";
  for (const model::RoleTable& t : in.roles) {
    // Driver rows only: the card accounting above has them already.
    if (t.roles_from == "driver only" && !t.notes.empty()) {
      out += "\nMemory by role on device " + std::to_string(t.device) + ": " + t.notes.back() +
             "; the driver level's figures are above (\"Where device " + std::to_string(t.device) + "'s ... went\")\n";
      continue;
    }
    out += "\n";
    for (const std::string& l : model::role_lines(t)) out += l + "\n";
  }
  const FrameworkRoles* r = facts_of(in.fw).usable_roles();
  if (r && !r->top.empty()) out += "  Largest tensors by role (framework.json):\n";
  for (size_t i = 0; r && i < r->top.size() && i < kTopTensors; ++i) {
    std::string amount = format_bytes(r->top[i].bytes);
    out += "    " + std::string(amount.size() < 10 ? 10 - amount.size() : 0, ' ') + amount + "  " + r->top[i].role +
           "  " + r->top[i].owner + (r->top[i].owner.empty() ? "" : " ") + r->top[i].name + "\n";
  }
  return out;
}

std::string advice_text(const BundleInsight& in) {
  std::string out;
  for (const std::string& l : model::advice_lines(in.advice)) out += l + "\n";
  return out.empty() ? out : "\n" + out;
}

void json_roles(JsonWriter& w, const BundleInsight& in) {
  w.Key("roles");
  w.StartObject();
  w.Key("tables");
  w.StartArray();
  for (const model::RoleTable& t : in.roles) json_table(w, t);
  w.EndArray();
  w.Key("framework");
  if (in.fw.present && in.fw.x.roles) json_framework_roles(w, *in.fw.x.roles);
  else w.Null();
  json_kv_or_null(w, "problem", in.fw.present ? in.fw.x.problem : std::string());
  w.EndObject();
}

void json_advice(JsonWriter& w, const BundleInsight& in) {
  w.Key("advice");
  w.StartArray();
  for (const model::Advice& a : in.advice) {
    w.StartObject();
    json_kv(w, "rule", a.rule);
    json_kv(w, "device", int64_t(a.device));
    json_kv(w, "evidence", a.evidence);
    json_kv(w, "action", a.action);
    json_kv(w, "source", a.source);
    w.EndObject();
  }
  w.EndArray();
}

void add_role_totals(const model::Bundle& b, RoleTotals* t) {
  const BundleInsight in = read_insight(b);
  for (const model::RoleTable& table : in.roles)
    for (const model::RoleRow& r : table.rows)
      if (r.bytes && r.role != "free" && r.role != "unaccounted") (*t)[role_key_of(r)] += *r.bytes;
}

std::string role_diff_text(const RoleTotals& o, const RoleTotals& n) {
  const std::set<std::string> keys = all_keys(o, n);
  if (keys.empty()) return "";
  Table t({"ROLE", "CHANGE", "OLD", "NEW"}, "lrrr");
  for (const std::string& k : keys) {
    auto a = o.find(k), b = n.find(k);
    const int64_t ov = a == o.end() ? 0 : a->second, nv = b == n.end() ? 0 : b->second;
    t.add({k, format_bytes_signed(nv - ov), a == o.end() ? "-" : format_bytes(uint64_t(std::max<int64_t>(ov, 0))),
           b == n.end() ? "-" : format_bytes(uint64_t(std::max<int64_t>(nv, 0)))});
  }
  return "By role (framework roles where framework.json has them; driver-level rows otherwise):\n" + t.render("  ");
}

void json_role_diff(JsonWriter& w, const RoleTotals& o, const RoleTotals& n) {
  const std::set<std::string> keys = all_keys(o, n);
  w.Key("roles");
  w.StartArray();
  for (const std::string& k : keys) {
    auto a = o.find(k), b = n.find(k);
    w.StartObject();
    json_kv(w, "role", k);
    json_kv(w, "old_bytes", a == o.end() ? std::optional<int64_t>() : std::optional<int64_t>(a->second));
    json_kv(w, "new_bytes", b == n.end() ? std::optional<int64_t>() : std::optional<int64_t>(b->second));
    json_kv(w, "change_bytes", (b == n.end() ? 0 : b->second) - (a == o.end() ? 0 : a->second));
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace gpumemrec::cli
