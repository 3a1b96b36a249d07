#include "tools/top_json.h"

#include <signal.h>
#include <string.h>

#include "common/framework_roles.h"
#include "tools/json_out.h"

namespace gpumemrec::cli {

namespace {

void null_kv(JsonWriter& w, const char* key) {
  w.Key(key);
  w.Null();
}

void device_json(JsonWriter& w, const status::DeviceView& d, const TopRow* r) {
  w.StartObject();
  json_kv(w, "device", int64_t(d.device));
  json_kv(w, "live_bytes", d.live_bytes);
  json_kv(w, "peak_bytes", d.peak_bytes);
  w.Key("peak_exact");
  w.Bool(d.peak_exact);
  if (d.peak_real_ns) json_kv(w, "peak_time", double(d.peak_real_ns) / 1e9);
  else null_kv(w, "peak_time");
  if (r && r->change_known) {
    json_kv(w, "change_bytes", r->change);
    json_kv(w, "change_over_s", r->change_over_s);
  } else {
    null_kv(w, "change_bytes");
    null_kv(w, "change_over_s");
  }
  const bool card = r && r->card.known;
  if (card) {
    json_kv(w, "card_total_bytes", r->card.total);
    json_kv(w, "card_free_bytes", r->card.free);
  } else {
    null_kv(w, "card_total_bytes");
    null_kv(w, "card_free_bytes");
  }
  json_kv_or_null(w, "bus_id", d.bus_id);
  w.Key("curve");
  w.StartArray();
  for (uint64_t v : d.curve) w.Uint64(v);
  w.EndArray();
  w.EndObject();
}

void sites_json(JsonWriter& w, const status::RegionView& v, size_t top) {
  json_kv(w, "sites_total", v.sites_total);
  json_kv(w, "names", std::string(names_name(v.names)));
  w.Key("sites");
  w.StartArray();
  for (size_t i = 0; i < v.sites.size() && i < top; ++i) {
    const status::SiteView& s = v.sites[i];
    w.StartObject();
    json_kv(w, "rank", uint64_t(i + 1));
    if (s.named) json_kv_or_null(w, "site", s.label);
    else null_kv(w, "site");
    json_kv_or_null(w, "library", s.library);
    w.Key("named");
    w.Bool(s.named);
    json_kv(w, "bytes", s.bytes);
    json_kv(w, "count", s.count);
    json_kv(w, "stack_id", s.stack_id);
    json_kv(w, "stacks", uint64_t(s.stacks));
    w.EndObject();
  }
  w.EndArray();
}

void roles_json(JsonWriter& w, const status::RolesView& r) {
  w.Key("roles");
  if (!r.present) {
    w.Null();
    return;
  }
  w.StartObject();
  json_kv(w, "device", int64_t(r.device));
  json_kv(w, "status", r.status);
  json_kv(w, "at", r.at);
  if (r.at_real_ns) json_kv(w, "time", double(r.at_real_ns) / 1e9);
  else null_kv(w, "time");
  w.Key("bytes");
  w.StartObject();
  for (size_t i = 0; i < kRoleCount; ++i) json_kv(w, role_key(kRoles[i]), r.bytes[i]);
  w.EndObject();
  w.EndObject();
}

void process_json(JsonWriter& w, const TopJsonInput& in, size_t index) {
  const status::RegionView& v = in.snapshot->processes[index].v;
  w.StartObject();
  json_kv(w, "pid", int64_t(v.pid));
  if (v.rank >= 0) json_kv(w, "rank", int64_t(v.rank));
  else null_kv(w, "rank");
  json_kv(w, "world_size", int64_t(v.world_size));
  json_kv(w, "command", v.command);
  json_kv(w, "state", std::string(state_name(v.state)));
  json_kv_or_null(w, "note", v.note);
  json_kv(w, "updated", double(v.updated_real_ns) / 1e9);
  const char* sig = v.dump_signal > 0 ? sigabbrev_np(v.dump_signal) : nullptr;
  if (v.dump_signal > 0) json_kv(w, "dump_signal", sig ? std::string("SIG") + sig : std::to_string(v.dump_signal));
  else null_kv(w, "dump_signal");
  json_kv_or_null(w, "dump_dir", v.dump_dir);
  w.Key("devices");
  w.StartArray();
  for (size_t d = 0; d < v.devices.size(); ++d) {
    const TopRow* row = nullptr;
    for (const TopRow& r : *in.rows)
      if (r.process == index && r.device == d) row = &r;
    device_json(w, v.devices[d], row);
  }
  w.EndArray();
  sites_json(w, v, in.top_sites);
  roles_json(w, v.roles);
  w.EndObject();
}

}  // namespace

void print_top_json(const TopJsonInput& in) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  json_kv(w, "schema", std::string("gpumemrec.top/1"));
  json_kv(w, "time", in.snapshot->time);
  json_kv(w, "status_dir", in.dir);
  json_kv_or_null(w, "cards_problem", in.cards_problem);
  w.Key("processes");
  w.StartArray();
  for (size_t i = 0; i < in.snapshot->processes.size(); ++i) process_json(w, in, i);
  w.EndArray();
  w.Key("skipped");
  w.StartArray();
  for (const TopSkipped& k : in.snapshot->skipped) {
    w.StartObject();
    json_kv_or_null(w, "file", k.file);
    if (k.pid) json_kv(w, "pid", int64_t(k.pid));
    else null_kv(w, "pid");
    json_kv(w, "why", k.why);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  print_json(buf);
}

}  // namespace gpumemrec::cli
