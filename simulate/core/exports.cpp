#include "core/exports.h"

#include <algorithm>
#include <cstring>

namespace sim {

// Overridden by the library's generated table (simulate/CMakeLists.txt).
__attribute__((weak)) extern const char* const kLibraryName = "";

void* find_export(const char* name) {
  const ExportEntry* end = kExports + kExportCount;
  const ExportEntry* it = std::lower_bound(kExports, end, name, [](const ExportEntry& e, const char* n) {
    return strcmp(e.name, n) < 0;
  });
  return it != end && strcmp(it->name, name) == 0 ? it->fn : nullptr;
}

}  // namespace sim
