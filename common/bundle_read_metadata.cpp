// manifest.json and metadata.json, read into the model through a DOM.
#include "common/bundle_read_files.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/bundle_read_json.h"
#include "common/bundle_schema.h"

namespace gpumemrec::model::read {

// manifest.json ---------------------------------------------------------------

bool read_manifest(const std::string& path, Manifest* m, ReadError* err) {
  std::vector<char> buf;
  rapidjson::Document d;
  if (!parse_dom(path, &buf, &d, err) || !expect_object(path, d, err)) return false;
  Fields f{path, "", err};
  auto sv = d.FindMember(key::kSchemaVersion);
  if (sv == d.MemberEnd()) {
    *err = {path, std::string("not a gpumemrec manifest: no ") + key::kSchemaVersion};
    return false;
  }
  if (!sv->value.IsInt64()) {
    *err = {path, std::string(key::kSchemaVersion) + " is not an integer"};
    return false;
  }
  m->schema_version = sv->value.GetInt64();
  if (m->schema_version != kBundleSchemaVersion) {
    *err = {path, "unsupported " + std::string(key::kSchemaVersion) + " " + std::to_string(m->schema_version) +
                      " (this gpumemrec reads version " + std::to_string(kBundleSchemaVersion) + ")"};
    return false;
  }
  if (!f.str(d, key::kBundleName, &m->bundle_name) || !f.str(d, key::kCreatedAtUtc, &m->created_at_utc) ||
      !f.str(d, key::kReason, &m->reason) || !f.str(d, key::kBackend, &m->backend) ||
      !f.u64(d, key::kEventCount, &m->event_count) || !f.str(d, key::kGenerator, &m->generator) ||
      !f.i64(d, key::kPid, &m->pid) || !f.str(d, key::kOutcome, &m->outcome))
    return false;
  auto files = d.FindMember(key::kFiles);
  if (files != d.MemberEnd() && files->value.IsArray()) {
    for (auto& v : files->value.GetArray())
      if (v.IsString()) m->files.emplace_back(v.GetString(), v.GetStringLength());
  }
  return true;
}

// metadata.json ---------------------------------------------------------------

namespace {

// "recovery": null (or absent) or an object.
bool read_recovery(const std::string& path, const Value& d, Metadata* m, ReadError* err) {
  auto it = d.FindMember(key::kRecovery);
  if (it == d.MemberEnd() || it->value.IsNull()) return true;
  if (!it->value.IsObject()) {
    *err = {path, key_text(key::kRecovery) + " is not an object or null"};
    return false;
  }
  Fields f{path, "recovery: ", err};
  Recovery r;
  const Value& v = it->value;
  if (!f.dbl(v, key::kAfterMs, &r.after_ms) || !f.u64(v, key::kFreedBytes, &r.freed_bytes) ||
      !f.u64(v, key::kRetrySize, &r.retry_size) || !f.str(v, key::kRetryApi, &r.retry_api) ||
      !f.num(v, key::kThreadId, &r.thread_id) || !f.str(v, key::kHandler, &r.handler))
    return false;
  m->recovery = std::move(r);
  return true;
}

// recovered_failures.count: a number >= 0 (a huge one saturates).
bool read_recovered_count(const std::string& path, const Value& o, uint64_t* out, ReadError* err) {
  auto it = o.FindMember(key::kCount);
  if (it == o.MemberEnd() || it->value.IsNull()) return true;
  const Value& v = it->value;
  if (!v.IsNumber()) {
    *err = {path, std::string(key::kRecoveredFailures) + ": " + key_text(key::kCount) + " is not a number"};
    return false;
  }
  if ((v.IsInt64() && v.GetInt64() < 0) || (!v.IsInt64() && !v.IsUint64() && v.GetDouble() < 0)) {
    *err = {path, std::string(key::kRecoveredFailures) + ": " + key_text(key::kCount) + " is negative"};
    return false;
  }
  *out = v.IsUint64() ? v.GetUint64() : double_to_u64(v.GetDouble());
  return true;
}

bool read_recovered_entry(const std::string& path, const Value& v, size_t i, RecoveredFailure* r, ReadError* err) {
  std::string where = std::string(key::kRecoveredFailures) + "." + key::kListed + " #" + std::to_string(i);
  if (!v.IsObject()) {
    *err = {path, where + " is not a JSON object"};
    return false;
  }
  Fields f{path, where + ": ", err};
  return f.dbl(v, key::kTimestamp, &r->timestamp) && f.device(v, key::kDeviceId, &r->device_id) &&
         f.u64(v, key::kSize, &r->size) && f.str(v, key::kApi, &r->api) && f.num(v, key::kThreadId, &r->thread_id) &&
         f.u64(v, key::kStackId, &r->stack_id) && f.dbl(v, key::kAfterMs, &r->after_ms) &&
         f.u64(v, key::kFreedBytes, &r->freed_bytes);
}

// "recovered_failures": {"count": N, "listed": [...]}; absent or null = none.
// Entries past kMaxRecoveredListed are counted, not read.
bool read_recovered_failures(const std::string& path, const Value& d, Metadata* m, ReadError* err) {
  auto it = d.FindMember(key::kRecoveredFailures);
  if (it == d.MemberEnd() || it->value.IsNull()) return true;
  if (!it->value.IsObject()) {
    *err = {path, key_text(key::kRecoveredFailures) + " is not an object or null"};
    return false;
  }
  const Value& o = it->value;
  if (!read_recovered_count(path, o, &m->recovered_count, err)) return false;
  auto listed = o.FindMember(key::kListed);
  if (listed == o.MemberEnd() || listed->value.IsNull()) return true;
  if (!listed->value.IsArray()) {
    *err = {path, std::string(key::kRecoveredFailures) + ": " + key_text(key::kListed) + " is not an array"};
    return false;
  }
  const auto arr = listed->value.GetArray();
  size_t keep = std::min<size_t>(arr.Size(), kMaxRecoveredListed);
  m->recovered_listed.resize(keep);
  for (size_t i = 0; i < keep; ++i)
    if (!read_recovered_entry(path, arr[static_cast<rapidjson::SizeType>(i)], i, &m->recovered_listed[i], err))
      return false;
  m->recovered_count = std::max<uint64_t>(m->recovered_count, arr.Size());
  return true;
}

// The verdict (all optional: absent from bundles written before verdicts
// existed and from signal/exit bundles).
// signal_requests (signal bundles): optional; an object of numbers.
bool read_signal_requests(const std::string& path, const Value& d, Metadata* m, ReadError* err) {
  auto it = d.FindMember(key::kSignalRequests);
  if (it == d.MemberEnd() || it->value.IsNull()) return true;
  if (!it->value.IsObject()) {
    *err = {path, key_text(key::kSignalRequests) + " is not an object"};
    return false;
  }
  Fields f{path, key_text(key::kSignalRequests) + ": ", err};
  SignalRequests r;
  const Value& v = it->value;
  if (!f.num(v, key::kSignal, &r.signal) || !f.u64(v, key::kCount, &r.count) ||
      !f.u64(v, key::kFirstNs, &r.first_ns) || !f.u64(v, key::kLastNs, &r.last_ns) ||
      !f.i64(v, key::kSenderPid, &r.sender_pid))
    return false;
  m->signal_requests = r;
  return true;
}

// simulated: optional; an object {profile, name, devices}.
bool read_simulated(const std::string& path, const Value& d, Metadata* m, ReadError* err) {
  auto it = d.FindMember(key::kSimulated);
  if (it == d.MemberEnd() || it->value.IsNull()) return true;
  if (!it->value.IsObject()) {
    *err = {path, key_text(key::kSimulated) + " is not an object or null"};
    return false;
  }
  Fields f{path, key_text(key::kSimulated) + ": ", err};
  Metadata::Simulated s;
  if (!f.str(it->value, key::kProfile, &s.profile) || !f.str(it->value, key::kName, &s.name) ||
      !f.num(it->value, key::kDevices, &s.devices))
    return false;
  m->simulated = std::move(s);
  return true;
}

bool read_outcome(const std::string& path, const Value& d, Metadata* m, ReadError* err) {
  Fields f{path, "", err};
  return f.str(d, key::kOutcome, &m->outcome) && f.str(d, key::kOutcomeDetail, &m->outcome_detail) &&
         read_recovery(path, d, m, err) && read_recovered_failures(path, d, m, err);
}

// device_accounting (docs/bundle-format.md): optional; each figure may be
// null; a wrong type is one error naming the key.
bool opt_i64(Fields& f, const Value& v, const char* key, std::optional<int64_t>* out) {
  if (!v.HasMember(key) || v[key].IsNull()) return true;
  int64_t x = 0;
  if (!f.i64(v, key, &x)) return false;
  *out = x;
  return true;
}

bool read_other_processes(const std::string& path, const Value& v, const std::string& where, DeviceAccounting* a,
                          ReadError* err) {
  auto it = v.FindMember(key::kOtherProcesses);
  if (it == v.MemberEnd() || it->value.IsNull()) return true;
  if (!it->value.IsArray()) {
    *err = {path, where + key_text(key::kOtherProcesses) + " is not an array or null"};
    return false;
  }
  a->other_processes.emplace();
  for (auto& p : it->value.GetArray()) {
    if (!p.IsObject() || a->other_processes->size() >= kMaxRecoveredListed) continue;
    Fields f{path, where + key::kOtherProcesses + ": ", err};
    GpuProcessUse u;
    if (!f.num(p, key::kPid, &u.pid) || !f.str(p, key::kName, &u.name) ||
        !f.opt_u64(p, key::kUsedBytes, &u.used_bytes))
      return false;
    a->other_processes->push_back(std::move(u));
  }
  return true;
}

bool read_one_accounting(const std::string& path, const Value& v, size_t i, DeviceAccounting* a, ReadError* err) {
  const std::string where = std::string(key::kDeviceAccounting) + " #" + std::to_string(i) + ": ";
  if (!v.IsObject()) {
    *err = {path, where + "not a JSON object"};
    return false;
  }
  Fields f{path, where, err};
  if (!f.device(v, key::kDevice, &a->device) || !f.opt_u64(v, key::kTotalBytes, &a->total_bytes) ||
      !f.opt_u64(v, key::kFreeBytes, &a->free_bytes) ||
      !f.u64(v, key::kRecordedLiveBytes, &a->recorded_live_bytes) ||
      !opt_i64(f, v, key::kProcessUnrecordedBytes, &a->process_unrecorded_bytes) ||
      !opt_i64(f, v, key::kUnaccountedBytes, &a->unaccounted_bytes) || !f.str(v, key::kNote, &a->note) ||
      !read_other_processes(path, v, where, a, err))
    return false;
  auto lib = v.FindMember(key::kRecordedByLibrary);
  if (lib != v.MemberEnd() && lib->value.IsObject())
    for (auto& kv : lib->value.GetObject())
      if (kv.value.IsUint64() && a->recorded_by_library.size() < kMaxRecoveredListed)
        a->recorded_by_library.emplace_back(std::string(kv.name.GetString(), kv.name.GetStringLength()),
                                            kv.value.GetUint64());
  return true;
}

bool read_device_accounting(const std::string& path, const Value& d, Metadata* m, ReadError* err) {
  auto it = d.FindMember(key::kDeviceAccounting);
  if (it == d.MemberEnd() || it->value.IsNull()) return true;
  if (!it->value.IsArray()) {
    *err = {path, key_text(key::kDeviceAccounting) + " is not an array"};
    return false;
  }
  size_t i = 0;
  for (auto& v : it->value.GetArray()) {
    if (i >= kMaxDeviceId + 1) break;
    DeviceAccounting a;
    if (!read_one_accounting(path, v, i++, &a, err)) return false;
    m->device_accounting.push_back(std::move(a));
  }
  return true;
}

}  // namespace

bool read_metadata(const std::string& path, Metadata* m, ReadError* err) {
  std::vector<char> buf;
  rapidjson::Document d;
  if (!parse_dom(path, &buf, &d, err) || !expect_object(path, d, err)) return false;
  Fields f{path, "", err};
  if (!f.str(d, key::kReason, &m->reason) || !f.str(d, key::kApi, &m->api) ||
      !f.i64(d, key::kErrorCode, &m->error_code) || !f.str(d, key::kErrorName, &m->error_name) ||
      !f.u64(d, key::kRequestedBytes, &m->requested_bytes) || !f.device(d, key::kDeviceId, &m->device_id) ||
      !f.opt_u64(d, key::kDeviceFreeBytes, &m->device_free_bytes) ||
      !f.opt_u64(d, key::kDeviceTotalBytes, &m->device_total_bytes) ||
      !f.u64(d, key::kLiveBytes, &m->live_bytes) || !f.u64(d, key::kLiveAllocations, &m->live_allocations) ||
      !f.num(d, key::kThreadId, &m->thread_id) || !f.u64(d, key::kStackId, &m->stack_id) ||
      !f.str(d, key::kContext, &m->context) || !f.str(d, key::kBackend, &m->backend) ||
      !f.u64(d, key::kCapturedEventCount, &m->captured_event_count) ||
      !f.u64(d, key::kTotalEventCount, &m->total_event_count) ||
      !f.u64(d, key::kFailedCallsBeforeDump, &m->failed_calls_before_dump) ||
      !f.dbl(d, key::kFrozenAfterFailureMs, &m->frozen_after_failure_ms) ||
      !read_signal_requests(path, d, m, err) ||
      !f.dbl(d, key::kTimestamp, &m->timestamp) || !read_outcome(path, d, m, err) ||
      !read_device_accounting(path, d, m, err) || !read_simulated(path, d, m, err))
    return false;
  auto lb = d.FindMember(key::kLiveBytesByDevice);
  if (lb != d.MemberEnd() && lb->value.IsObject()) {
    for (auto& kv : lb->value.GetObject()) {
      char* end = nullptr;
      errno = 0;
      long long id = strtoll(kv.name.GetString(), &end, 10);
      if (errno || end == kv.name.GetString() || *end || id < -1 || id > kMaxDeviceId) {
        *err = {path, std::string(key::kLiveBytesByDevice) + ": device '" + std::string(kv.name.GetString(), kv.name.GetStringLength()) +
                          "' is not a device id (-1.." + std::to_string(kMaxDeviceId) + ")"};
        return false;
      }
      int32_t dev = static_cast<int32_t>(id);
      if (kv.value.IsUint64()) m->live_bytes_by_device[dev] = kv.value.GetUint64();
      else if (kv.value.IsNumber()) m->live_bytes_by_device[dev] = double_to_u64(kv.value.GetDouble());
    }
  }
  auto cm = d.FindMember(key::kCustomMetadata);
  if (cm != d.MemberEnd() && cm->value.IsObject()) {
    for (auto& kv : cm->value.GetObject()) {
      std::string key(kv.name.GetString(), kv.name.GetStringLength());
      std::string val = value_text(kv.value);
      if (key == key::kRank) {
        if (kv.value.IsInt64()) m->rank = kv.value.GetInt64();
        else if (kv.value.IsString()) {
          char* end = nullptr;
          long long r = strtoll(val.c_str(), &end, 10);
          if (end && *end == '\0' && !val.empty()) m->rank = r;
        }
      } else if (key == key::kHostname) {
        m->hostname = val;
      }
      m->custom_metadata.emplace_back(std::move(key), std::move(val));
    }
  }
  return true;
}


}  // namespace gpumemrec::model::read
