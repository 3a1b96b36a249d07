// libFuzzer target: the bundle reader the gpumemrec tool uses
// (common/bundle_reader.h). The input is split on NUL bytes into the files
// of one bundle, in this order: manifest.json, metadata.json, events.json,
// allocations.json, stacks.json, environment.json. Missing parts are left
// out of the directory. The reader must never crash, hang or leak; on
// failure it must say which file is at fault.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/bundle_reader.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace {

const char* const kFiles[] = {"manifest.json", "metadata.json", "events.json",
                              "allocations.json", "stacks.json", "environment.json"};

std::string scratch_dir() {
  static std::string dir;
  if (dir.empty()) {
    const char* base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    char tmpl[512];
    std::snprintf(tmpl, sizeof tmpl, "%s/gm-fuzz-bundle-XXXXXX", base);
    if (!mkdtemp(tmpl)) abort();
    dir = tmpl;
  }
  return dir;
}

void put(const std::string& path, const uint8_t* data, size_t n) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) abort();
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w <= 0) abort();
    data += w;
    n -= size_t(w);
  }
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = scratch_dir();
  for (const char* f : kFiles) unlink((dir + "/" + f).c_str());
  size_t start = 0;
  int part = 0;
  for (size_t i = 0; i <= size && part < 6; ++i) {
    if (i == size || data[i] == 0) {
      put(dir + "/" + kFiles[part], data + start, i - start);
      ++part;
      start = i + 1;
    }
  }
  ReadOptions opts;
  opts.progress = [](const char*, double f) {
    if (!(f >= 0.0 && f <= 1.0)) abort();
  };
  Bundle b;
  ReadError err;
  if (!read_bundle(dir, opts, &b, &err)) {
    if (err.file.empty() || err.what.empty() || err.what.find('\n') != std::string::npos) abort();
  }
  return 0;
}
