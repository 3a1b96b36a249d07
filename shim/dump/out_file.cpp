#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shim/dump/bundle_files.h"

namespace gpumemrec {

OutFile::OutFile(BundleFiles& files, const char* name)
    : name_(name),
      fd_(openat(files.dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)),
      out_(fd_, files.buf.data, files.buf.size) {
  if (fd_ >= 0) files.names.push_back(name);
  else open_errno_ = errno;
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
  if (!good) *error = std::string("cannot write ") + name_ + ": " + std::strerror(err);
  return good;
}

}  // namespace gpumemrec
