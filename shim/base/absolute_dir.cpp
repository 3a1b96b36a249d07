#include "shim/base/absolute_dir.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace gpumemrec {

std::string absolute_dump_dir(const std::string& dir, std::string* why) {
  if (dir.empty() || dir[0] == '/') return dir;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd) || cwd[0] != '/') {
    // getcwd fails when the directory was removed or is unreachable (ENOENT,
    // EACCES) and may return "(unreachable)/..." on old kernels.
    *why = std::string("cannot resolve the relative GPUMEMREC_DIR ") + dir + " (getcwd: " +
           (errno ? std::strerror(errno) : "unreachable") + "); bundles go to " + dir +
           " relative to the working directory at the time of the dump";
    return dir;
  }
  std::string rel = dir;
  while (rel.size() >= 2 && rel[0] == '.' && rel[1] == '/') rel.erase(0, 2);
  std::string out = cwd;
  if (rel.empty() || rel == ".") return out;
  if (out.back() != '/') out += '/';
  return out + rel;
}

}  // namespace gpumemrec
