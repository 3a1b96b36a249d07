// Memory by role, in the user's terms: one table per device that joins the
// framework's own view (framework.json: its tensors by role from the Python
// hook's walk, or at least PyTorch's allocated vs reserved) with what the
// bundle knows at the driver level (metadata.json device_accounting: the
// libraries outside the framework's allocator, this process's unrecorded
// memory such as the CUDA context, other processes, free). Without a
// framework digest the roles are unknown and the table says only what the
// driver level tells: it never guesses a role. Used by report, html, query,
// diff and the Python reader (through report --json).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bundle_model.h"
#include "common/framework_digest.h"
#include "common/framework_roles.h"

namespace gpumemrec::model {

// What the framework said (framework.json), either may be null.
struct FrameworkFacts {
  const FrameworkDigest* digest = nullptr;
  const FrameworkExtras* extras = nullptr;
  // The roles when they can be used: present, status complete or partial.
  const FrameworkRoles* usable_roles() const;
  // The device the framework's figures are about (-1 when unknown).
  int64_t device() const;
};

struct RoleRow {
  // weights, gradients, optimizer_state, kv_cache, activations,
  // allocator_cache, unknown (the framework's roles); framework_allocated
  // (the framework's tensors when their roles are unknown); library (an
  // allocation path outside the framework's allocator, `name` says which;
  // without a digest, the framework's own library too); context (this
  // process's memory past the recorded calls); other_process; free;
  // unaccounted.
  std::string role;
  std::string layer;  // "framework" or "driver"
  std::string name;   // the library, "pid N name", or "" for the others
  std::optional<int64_t> bytes;  // null when unknown
};

struct RoleTable {
  int32_t device = -1;
  std::optional<uint64_t> total_bytes;
  std::string roles_from;  // "framework roles (complete|partial)", "framework digest", "driver only"
  std::vector<RoleRow> rows;
  std::vector<std::string> notes;  // why a role is unknown, what the walk said
};

// libc10*/libtorch*: PyTorch's allocator, whose segments the framework's
// roles break down (common/site_rules.cpp names them).
bool framework_library(const std::string& library);

// One table per device with a card accounting, and the framework's device.
std::vector<RoleTable> role_tables(const Bundle& b, const FrameworkFacts& f);

// "Memory by role on device 0 (of 80.00 GiB; framework roles (complete)):"
// then one line per row and the notes.
std::vector<std::string> role_lines(const RoleTable& t);

// The label people read for a row ("optimizer state", "NCCL (libnccl.so.2)").
std::string role_row_label(const RoleRow& r);

}  // namespace gpumemrec::model
