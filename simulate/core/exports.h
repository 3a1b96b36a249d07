// Every function a simulated library exports, by name (generated with the
// library's stubs from simulate/exports/<soname>.txt; the address is the
// library's own definition where it models the function, else its stub).
#pragma once

#include <cstddef>

namespace sim {

struct ExportEntry {
  const char* name;
  void* fn;
};

// Sorted by name (strcmp order).
extern const ExportEntry kExports[];
extern const size_t kExportCount;

// The SONAME of the library this copy of the core is linked into
// ("libcuda.so.1"; "" outside a simulated library, e.g. in unit tests).
extern const char* const kLibraryName;

// The library's function called exactly `name`, or nullptr.
void* find_export(const char* name);

}  // namespace sim
