#include "tools/table_schema.h"

#include "common/bundle_keys.h"
#include "tools/cli.h"
#include "tools/export_tables.h"

namespace gpumemrec::cli {

namespace {

constexpr ColumnType S = ColumnType::kString, I = ColumnType::kInt64, U = ColumnType::kUInt64,
                     D = ColumnType::kDouble, B = ColumnType::kBool, L = ColumnType::kStringList;

std::vector<TableSchema> make_schemas() {
  std::vector<TableColumn> bundles = {
      {"tables_version", I}, {"bundle_id", S}, {"host", S}, {key::kPid, I}, {key::kRank, I},
      {key::kLocalRank, I}, {key::kWorldSize, I}, {key::kJobId, S}, {key::kReason, S}, {key::kOutcome, S},
      {key::kBackend, S}, {"time", D}, {key::kApi, S}, {key::kErrorName, S}, {key::kDeviceId, I},
      {"asked_bytes", U}, {key::kDeviceFreeBytes, U}, {key::kDeviceTotalBytes, U}, {key::kLiveBytes, U},
      {key::kLiveAllocations, U}, {"live_bytes_device", U}, {"failing_stack_id", U}, {"site", S},
      {"library", S}, {key::kEventCount, U}, {"recovered_count", U}, {"acct_total_bytes", U},
      {"acct_free_bytes", U}, {"acct_recorded_live_bytes", U}, {"acct_process_unrecorded_bytes", I},
      {"acct_other_processes_bytes", U}, {"acct_unaccounted_bytes", I}, {"peak_bytes", U}, {"peak_exact", B},
      {"roles_status", S}, {"roles_weights", U}, {"roles_gradients", U}, {"roles_optimizer_state", U},
      {"roles_kv_cache", U}, {"roles_activations", U}, {"roles_allocator_cache", U}, {"roles_unknown", U}};
  std::vector<TableColumn> events = {
      {"bundle_id", S}, {key::kSeq, U}, {key::kTimestamp, D}, {key::kTimestampNs, U}, {key::kEventType, S},
      {key::kMemoryAllocated, U}, {key::kMemoryChange, I}, {key::kDeviceId, I}, {key::kApi, S},
      {key::kMemoryType, S}, {key::kAddress, U}, {key::kSize, U}, {key::kResult, I}, {key::kThreadId, U},
      {key::kStackId, U}, {key::kDurationNs, U}, {key::kStream, U}, {key::kDeviceTotal, U},
      {key::kDeviceFree, U}};
  std::vector<TableColumn> allocations = {
      {"bundle_id", S}, {key::kAddress, U}, {key::kSize, U}, {key::kDeviceId, I}, {key::kApi, S},
      {key::kMemoryType, S}, {key::kTimestamp, D}, {key::kThreadId, U}, {key::kStackId, U}, {key::kSeq, U}};
  std::vector<TableColumn> sites = {
      {"bundle_id", S}, {key::kStackId, U}, {"python", S}, {"site", S}, {"site_function", S}, {"site_file", S},
      {"site_line", I}, {"site_module", S}, {"library", S}, {"frames", L}};
  return {{"bundles", bundles}, {"events", events}, {"allocations", allocations}, {"sites", sites}};
}

}  // namespace

const char* column_type_name(ColumnType t) {
  switch (t) {
    case ColumnType::kString: return "string";
    case ColumnType::kInt64: return "int64";
    case ColumnType::kUInt64: return "uint64";
    case ColumnType::kDouble: return "double";
    case ColumnType::kBool: return "bool";
    case ColumnType::kStringList: return "list<string>";
  }
  return "string";
}

const std::vector<TableSchema>& table_schemas() {
  static const std::vector<TableSchema> schemas = make_schemas();
  return schemas;
}

const TableSchema& table_schema(const std::string& name) {
  for (const TableSchema& t : table_schemas())
    if (name == t.name) return t;
  failure("internal error: no table named " + name);
}

std::string schema_json() {
  std::string out = "{\"tables_version\": " + std::to_string(kTablesVersion) + ", \"tables\": {";
  for (const TableSchema& t : table_schemas()) {
    out += std::string(&t == &table_schemas().front() ? "" : ", ") + "\"" + t.name + "\": [";
    for (const TableColumn& c : t.columns)
      out += std::string(&c == &t.columns.front() ? "" : ", ") + "[\"" + c.name + "\", \"" +
             column_type_name(c.type) + "\"]";
    out += "]";
  }
  return out + "}}\n";
}

}  // namespace gpumemrec::cli
