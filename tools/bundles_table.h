// The `bundles` table of `gpumemrec export --format tables`: one row per
// bundle (who: host, pid, rank; what failed; the device's figures; the card
// accounting; the peak and the framework's roles when the bundle has them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/bundle_model.h"
#include "common/json_records.h"

namespace gpumemrec::cli {

class TableFile;

// The launcher identity as events.json spells it in every event (absent
// keys: rank 0 of 1, docs/bundle-format.md "Keys left out").
struct LauncherKeys {
  bool present = false;  // an event carried rank / world_size
  int64_t rank = 0, local_rank = 0, world_size = 1;
  std::optional<std::string> job_id;
};
LauncherKeys launcher_keys_of(const model::read::FlatRecord& event);

// The figures of the optional files peak.json and framework.json.
constexpr int kRoleCount = 7;
extern const char* const kRoles[kRoleCount];
struct BundleExtras {
  std::optional<uint64_t> peak_bytes;
  std::optional<bool> peak_exact;
  std::optional<std::string> roles_status;
  std::optional<uint64_t> roles[kRoleCount];
};
// Reads them when present; a file that cannot be read leaves its columns
// null and says so on stderr.
BundleExtras read_extras(const std::string& bundle_dir, const model::Bundle& b);

void write_bundle_row(const model::Bundle& b, const std::string& id, const LauncherKeys& who,
                      const BundleExtras& extras, TableFile* t);

}  // namespace gpumemrec::cli
