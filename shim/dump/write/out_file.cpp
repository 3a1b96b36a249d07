#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "shim/base/dump_progress.h"
#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

namespace {

std::string new_name(const char* name) { return std::string(name) + ".new"; }

// The file to write: <name>, or <name>.new when writing it again (a stale
// one, left by a process killed while rewriting, is removed first).
int open_out(BundleFiles& files, const char* name) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  if (!files.rewrite) return openat(files.dirfd, name, flags, 0600);
  const std::string tmp = new_name(name);
  unlinkat(files.dirfd, tmp.c_str(), 0);
  return openat(files.dirfd, tmp.c_str(), flags, 0600);
}

}  // namespace

OutFile::OutFile(BundleFiles& files, const char* name)
    : name_(name), files_(files), fd_(open_out(files, name)), out_(fd_, files.buf.data, files.buf.size) {
  if (fd_ < 0) open_errno_ = errno;
  else if (!files.rewrite) files.names.push_back(name);
}

OutFile::~OutFile() {
  if (fd_ >= 0) close(fd_);
}

bool OutFile::finish(std::string* error) {
  if (fd_ < 0) {
    *error = std::string("cannot create ") + name_ + ": " + std::strerror(open_errno_);
    return false;
  }
  bool good = out_.finish();
  int err = out_.error();
  if (good && fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
    good = false;
    err = errno;
  }
  if (good && files_.rewrite && renameat(files_.dirfd, new_name(name_).c_str(), files_.dirfd, name_) != 0) {
    good = false;
    err = errno;
  }
  if (!good) {
    *error = std::string("cannot write ") + name_ + ": " + std::strerror(err);
    if (files_.rewrite) unlinkat(files_.dirfd, new_name(name_).c_str(), 0);  // the old file stays
  }
  if (good) dump_progress_file_done();
  return good;
}

}  // namespace gpumemrec
