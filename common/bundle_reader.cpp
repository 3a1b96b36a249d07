// Loads a bundle directory: manifest.json first (the schema version, the
// files it lists must all be there), then each file through its reader
// (common/bundle_read_files.h).
#include "common/bundle_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/bundle_read_files.h"
#include "common/bundle_read_json.h"
#include "common/bundle_schema.h"

namespace gpumemrec::model {

using read::file_exists;
using read::join_path;

bool is_bundle_dir(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  return file_exists(join_path(dir, file::kManifest));
}

bool read_bundle(const std::string& dir, const ReadOptions& opts, Bundle* out, ReadError* err) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    *err = {dir, errno == ENOENT ? "no such file or directory" : std::string(strerror(errno))};
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *err = {dir, "not a bundle: expected a bundle directory, got a file"};
    return false;
  }
  if (!file_exists(join_path(dir, file::kManifest))) {
    *err = {dir, std::string("not a gpumemrec bundle: ") + file::kManifest + " is missing"};
    return false;
  }
  out->path = dir;
  if (!read::read_manifest(join_path(dir, file::kManifest), &out->manifest, err)) return false;
  // Every file the manifest lists must be there.
  for (const auto& name : out->manifest.files) {
    if (name.find('/') != std::string::npos) continue;
    std::string p = join_path(dir, name.c_str());
    if (!file_exists(p)) {
      *err = {p, std::string("missing file (listed in ") + file::kManifest + ")"};
      return false;
    }
  }
  if (!read::read_metadata(join_path(dir, file::kMetadata), &out->metadata, err)) return false;
  if (opts.environment) {
    std::string p = join_path(dir, file::kEnvironment);
    if (file_exists(p) && !read::read_environment(p, &out->environment, err)) return false;
  }
  if (opts.stacks) {
    if (!read::read_stacks(read::bundle_file(dir, file::kStacks), out, err)) return false;
    out->stack_index.clear();
    for (size_t i = 0; i < out->stacks.size(); ++i) out->stack_index[out->stacks[i].stack_id] = i;
  }
  if (opts.allocations && !read::read_allocations(read::bundle_file(dir, file::kAllocations), out, err)) return false;
  if (opts.events && !read::read_events(read::bundle_file(dir, file::kEvents), opts, out, err)) return false;
  return true;
}

}  // namespace gpumemrec::model
