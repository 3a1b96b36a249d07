#include "core/exports.h"

#include <algorithm>
#include <cstring>

namespace sim {

void* find_export(const char* name) {
  const ExportEntry* end = kExports + kExportCount;
  const ExportEntry* it = std::lower_bound(kExports, end, name, [](const ExportEntry& e, const char* n) {
    return strcmp(e.name, n) < 0;
  });
  return it != end && strcmp(it->name, name) == 0 ? it->fn : nullptr;
}

}  // namespace sim
