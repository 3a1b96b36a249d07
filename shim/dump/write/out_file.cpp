#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <atomic>
#include <string>

#include "common/zstd_dl.h"
#include "shim/base/dump_progress.h"
#include "shim/base/log.h"
#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

namespace {

std::string new_name(const std::string& name) { return name + ".new"; }

// The file to write: <name>, or <name>.new when writing it again (a stale
// one, left by a process killed while rewriting, is removed first).
int open_out(BundleFiles& files, const std::string& name) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  if (!files.rewrite) return openat(files.dirfd, name.c_str(), flags, 0600);
  const std::string tmp = new_name(name);
  unlinkat(files.dirfd, tmp.c_str(), 0);
  return openat(files.dirfd, tmp.c_str(), flags, 0600);
}

// The compressor for a compressible file, or null (said once per process
// when zstd was asked for and cannot be used).
std::unique_ptr<ZstdOut> compressor(const BundleFiles& files, bool compressible) {
  if (!files.compress || !compressible) return nullptr;
  const char* why = "";
  std::unique_ptr<ZstdOut> z = ZstdOut::make(&why);
  static std::atomic<bool> said{false};
  if (!z && !said.exchange(true))
    GM_WARN("GPUMEMREC_COMPRESS=zstd: {}; bundle files are written as plain JSON", why);
  return z;
}

}  // namespace

OutFile::OutFile(BundleFiles& files, const char* name, bool compressible)
    : zstd_(compressor(files, compressible)),
      name_(zstd_ ? std::string(name) + zstd::kSuffix : std::string(name)),
      files_(files),
      fd_(open_out(files, name_)),
      out_(fd_, files.buf.data, files.buf.size) {
  if (fd_ < 0) open_errno_ = errno;
  else if (!files.rewrite) files.names.push_back(name_);
  if (zstd_ && fd_ >= 0) {
    zstd_->set_fd(fd_);
    out_.compress_with(zstd_.get());
  }
}

OutFile::~OutFile() {
  if (fd_ >= 0) close(fd_);
}

bool OutFile::finish(std::string* error) {
  if (fd_ < 0) {
    *error = "cannot create " + name_ + ": " + std::strerror(open_errno_);
    return false;
  }
  bool good = out_.finish();
  int err = out_.error();
  if (good && fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
    good = false;
    err = errno;
  }
  if (good && files_.rewrite && renameat(files_.dirfd, new_name(name_).c_str(), files_.dirfd, name_.c_str()) != 0) {
    good = false;
    err = errno;
  }
  if (!good) {
    *error = "cannot write " + name_ + ": " + std::strerror(err);
    if (files_.rewrite) unlinkat(files_.dirfd, new_name(name_).c_str(), 0);  // the old file stays
  }
  if (good) dump_progress_file_done();
  return good;
}

}  // namespace gpumemrec
