// libFuzzer target: each reader entry point on its own. The first byte picks
// one file of a bundle (manifest, metadata, events, allocations, stacks,
// environment); the rest of the input replaces that file in an otherwise
// valid bundle, so every parser is reached without the fuzzer having to get
// the manifest right first (fuzz_bundle_reader mutates all files at once).
// The reader must never crash, hang or leak; on failure it names the file it
// was given, in one line.
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

struct File {
  const char* name;
  const char* valid;
};
const File kFiles[] = {
    {"manifest.json",
     R"({"schema_version":1,"bundle_name":"b","reason":"oom","backend":"cuda","event_count":2,)"
     R"("files":["manifest.json","metadata.json","events.json","allocations.json","stacks.json","environment.json"]})"},
    {"metadata.json",
     R"({"reason":"oom","api":"cudaMalloc","device_id":0,"requested_bytes":1024,"live_bytes_by_device":{"0":512},)"
     R"("custom_metadata":{"rank":"3","hostname":"h"},"timestamp":1.5})"},
    {"events.json",
     R"([{"seq":1,"timestamp":1.0,"event_type":"allocation","device_id":0,"api":"cudaMalloc","memory_type":"device",)"
     R"("address":4096,"size":512,"stack_id":1},{"seq":2,"event_type":"oom","device_id":0,"size":1024}])"},
    {"allocations.json", R"([{"address":4096,"size":512,"device_id":0,"api":"cudaMalloc","stack_id":1,"seq":1}])"},
    {"stacks.json",
     R"([{"stack_id":1,"python":"captured","frames":[{"kind":"python","function":"f","file":"a.py","line":3},)"
     R"({"kind":"native","module":"libx.so","offset":16}]}])"},
    {"environment.json",
     R"({"pid":1,"cmdline":["python","t.py"],"devices":[{"device_id":0,"name":"G","total_bytes":1}],"env":{"A":"b"}})"},
};

std::string scratch_dir() {
  static std::string dir;
  if (dir.empty()) {
    const char* base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    char tmpl[512];
    std::snprintf(tmpl, sizeof tmpl, "%s/gm-fuzz-file-XXXXXX", base);
    if (!mkdtemp(tmpl)) abort();
    dir = tmpl;
  }
  return dir;
}

void put(const std::string& path, const void* p, size_t n) {
  const char* data = static_cast<const char*>(p);
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
  if (size == 0) return 0;
  const std::string dir = scratch_dir();
  const size_t pick = data[0] % 6;
  for (size_t i = 0; i < 6; ++i) {
    const std::string p = dir + "/" + kFiles[i].name;
    if (i == pick) put(p, data + 1, size - 1);
    else put(p, kFiles[i].valid, std::string(kFiles[i].valid).size());
  }
  ReadOptions opts;
  opts.threads = (data[0] / 6) % 2 ? 1 : 0;
  opts.progress = [](const char*, double f) {
    if (!(f >= 0.0 && f <= 1.0)) abort();
  };
  Bundle b;
  ReadError err;
  if (!read_bundle(dir, opts, &b, &err)) {
    if (err.file.empty() || err.what.empty() || err.what.find('\n') != std::string::npos) abort();
    // The fault is in the file we changed (or the manifest's list of files).
    if (err.file.find(kFiles[pick].name) == std::string::npos && pick != 0) abort();
  }
  return 0;
}
