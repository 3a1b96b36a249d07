// One device_accounting object (common/card_accounting.h) as JSON, for any
// RapidJSON-style writer: the shim's metadata.json writer and `gpumemrec
// report --json` write the same object. The keys, grouped: device,
// total_bytes, free_bytes, recorded_live_bytes, recorded_by_library {library:
// bytes}, process_unrecorded_bytes, other_processes [{pid, name,
// used_bytes}], unaccounted_bytes, note (docs/bundle-format.md).
#pragma once
#include <optional>
#include <type_traits>

#include "common/bundle_keys.h"
#include "common/bundle_model.h"

namespace gpumemrec::model {

template <typename W, typename T>
void write_optional_int(W& w, const char* key, const std::optional<T>& v) {
  w.Key(key);
  if (!v) w.Null();
  else if constexpr (std::is_signed_v<T>) w.Int64(*v);
  else w.Uint64(*v);
}

template <typename W>
void write_other_processes(W& w, const DeviceAccounting& a) {
  w.Key(key::kOtherProcesses);
  if (!a.other_processes) {
    w.Null();
    return;
  }
  w.StartArray();
  for (const GpuProcessUse& p : *a.other_processes) {
    w.StartObject();
    w.Key(key::kPid);
    w.Uint(p.pid);
    w.Key(key::kName);
    w.String(p.name.c_str(), static_cast<unsigned>(p.name.size()));
    write_optional_int(w, key::kUsedBytes, p.used_bytes);
    w.EndObject();
  }
  w.EndArray();
}

template <typename W>
void write_device_accounting_json(W& w, const DeviceAccounting& a) {
  w.StartObject();
  w.Key(key::kDevice);
  w.Int(a.device);
  write_optional_int(w, key::kTotalBytes, a.total_bytes);
  write_optional_int(w, key::kFreeBytes, a.free_bytes);
  w.Key(key::kRecordedLiveBytes);
  w.Uint64(a.recorded_live_bytes);
  w.Key(key::kRecordedByLibrary);
  w.StartObject();
  for (const auto& kv : a.recorded_by_library) {
    w.Key(kv.first.c_str(), static_cast<unsigned>(kv.first.size()));
    w.Uint64(kv.second);
  }
  w.EndObject();
  write_optional_int(w, key::kProcessUnrecordedBytes, a.process_unrecorded_bytes);
  write_other_processes(w, a);
  write_optional_int(w, key::kUnaccountedBytes, a.unaccounted_bytes);
  w.Key(key::kNote);
  w.String(a.note.c_str(), static_cast<unsigned>(a.note.size()));
  w.EndObject();
}

}  // namespace gpumemrec::model
