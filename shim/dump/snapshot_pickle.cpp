#include "shim/dump/snapshot_pickle.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#define RAPIDJSON_HAS_STDSTRING 1
#include <rapidjson/document.h>
#include <rapidjson/writer.h>

#include "common/bundle_reader.h"
#include "common/memviz_snapshot.h"

namespace gpumemrec {

namespace {

struct FdSink {
  int fd;
  int error = 0;
  static bool write(void* ctx, const uint8_t* data, size_t n) {
    auto* s = static_cast<FdSink*>(ctx);
    while (n && !s->error) {
      ssize_t w = ::write(s->fd, data, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        s->error = errno;
        break;
      }
      data += w;
      n -= size_t(w);
    }
    return s->error == 0;
  }
};

std::string read_all(int dirfd, const char* name) {
  std::string out;
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  close(fd);
  return out;
}

bool write_all(int fd, const std::string& s) {
  FdSink sink{fd};
  return FdSink::write(&sink, reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

}  // namespace

bool add_snapshot_pickle(const std::string& dir, int dirfd, std::string* error) {
  {
    // Decide from the manifest before reading anything big back.
    rapidjson::Document m;
    std::string text = read_all(dirfd, "manifest.json");
    m.Parse(text.c_str());
    if (m.HasParseError() || !m.IsObject() || !m.HasMember("event_count") || !m["event_count"].IsUint64()) {
      *error = "manifest.json unreadable after writing";
      return false;
    }
    if (m["event_count"].GetUint64() > kSnapshotMaxEvents) {
      *error = "ring too large for a snapshot at dump time (use gpumemrec export)";
      return false;
    }
  }
  model::ReadOptions opts;
  opts.environment = false;
  opts.threads = 1;  // never start threads inside the program
  model::Bundle bundle;
  model::ReadError rerr;
  if (!model::read_bundle(dir, opts, &bundle, &rerr)) {
    *error = "cannot read the bundle back: " + rerr.message();
    return false;
  }
  if (bundle.events.size() > kSnapshotMaxEvents) {
    *error = "ring too large for a snapshot at dump time";
    return false;
  }
  const MemvizPlan plan = build_memviz_plan(bundle);

  int fd = openat(dirfd, "snapshot.pickle", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = std::string("cannot create snapshot.pickle: ") + std::strerror(errno);
    return false;
  }
  FdSink sink{fd};
  bool ok;
  {
    PickleWriter w(&FdSink::write, &sink);
    ok = write_memviz_pickle(bundle, plan, w);
  }
  ok = ok && sink.error == 0 && fsync(fd) == 0;
  close(fd);
  if (!ok) {
    *error = std::string("cannot write snapshot.pickle: ") + std::strerror(sink.error ? sink.error : EIO);
    unlinkat(dirfd, "snapshot.pickle", 0);
    return false;
  }

  // List it in the manifest: rewrite through a temporary file and a rename.
  rapidjson::Document m;
  std::string text = read_all(dirfd, "manifest.json");
  m.Parse(text.c_str());
  if (m.HasParseError() || !m.IsObject() || !m.HasMember("files") || !m["files"].IsArray()) {
    *error = "manifest.json unreadable after writing";
    unlinkat(dirfd, "snapshot.pickle", 0);
    return false;
  }
  auto& files = m["files"];
  rapidjson::Value name("snapshot.pickle", m.GetAllocator());
  // Keep manifest.json last in the list, as written.
  files.PushBack(name, m.GetAllocator());
  const rapidjson::SizeType n = files.Size();
  if (n >= 2 && std::strcmp(files[n - 2].GetString(), "manifest.json") == 0) files[n - 2].Swap(files[n - 1]);
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  m.Accept(w);
  int mfd = openat(dirfd, ".manifest.json.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool mok = mfd >= 0 && write_all(mfd, std::string(sb.GetString(), sb.GetSize())) && fsync(mfd) == 0;
  if (mfd >= 0) close(mfd);
  if (!mok || renameat(dirfd, ".manifest.json.tmp", dirfd, "manifest.json") != 0) {
    *error = "cannot rewrite manifest.json";
    unlinkat(dirfd, ".manifest.json.tmp", 0);
    unlinkat(dirfd, "snapshot.pickle", 0);
    return false;
  }
  return true;
}

}  // namespace gpumemrec
