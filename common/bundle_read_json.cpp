#include "common/bundle_read_json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <rapidjson/error/en.h>

#include "common/block_stream.h"
#include "common/zstd_dl.h"

namespace gpumemrec::model::read {

std::string join_path(const std::string& dir, const char* name) {
  if (!dir.empty() && dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string bundle_file(const std::string& dir, const char* name) {
  std::string p = join_path(dir, name);
  if (file_exists(p)) return p;
  std::string z = p + zstd::kSuffix;
  return file_exists(z) ? z : p;
}

std::string stream_error(const std::string& zstd_error, int err) {
  return zstd_error.empty() ? std::string("read error: ") + strerror(err) : zstd_error;
}

bool file_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

bool open_regular(const std::string& path, uint64_t max_bytes, int* fd_out, size_t* size, ReadError* err) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *err = {path, errno == ENOENT ? "missing file" : std::string("cannot open: ") + strerror(errno)};
    return false;
  }
  struct stat st;
  const char* bad = nullptr;
  if (fstat(fd, &st) != 0) bad = "cannot stat";
  else if (S_ISDIR(st.st_mode)) bad = "is a directory, expected a JSON file";
  else if (S_ISFIFO(st.st_mode)) bad = "is a FIFO, expected a regular JSON file";
  else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) bad = "is a device, expected a regular JSON file";
  else if (!S_ISREG(st.st_mode)) bad = "is not a regular file, expected a JSON file";
  if (bad) {
    close(fd);
    *err = {path, bad};
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    close(fd);
    *err = {path, "too large: " + std::to_string(st.st_size) + " bytes (this gpumemrec reads at most " +
                      std::to_string(max_bytes) + ")"};
    return false;
  }
  if (st.st_size == 0) {
    close(fd);
    *err = {path, "empty file (truncated?)"};
    return false;
  }
  *fd_out = fd;
  *size = static_cast<size_t>(st.st_size);
  return true;
}

ssize_t pread_full(int fd, char* buf, size_t want, uint64_t offset) {
  size_t n = 0;
  while (n < want) {
    ssize_t got = pread(fd, buf + n, want - n, static_cast<off_t>(offset + n));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    n += static_cast<size_t>(got);
  }
  return static_cast<ssize_t>(n);
}

namespace {

// A compressed (small) file, decompressed whole, NUL-terminated; at most
// kMaxDomFileBytes once decompressed.
bool read_zstd_file(const std::string& path, int fd, size_t size, std::vector<char>* buf, ReadError* err) {
  BlockStream in(fd, 0, size, true);
  buf->clear();
  const char* data = nullptr;
  while (size_t n = in.next_block(&data)) {
    if (buf->size() + n > kMaxDomFileBytes) {
      *err = {path, "too large once decompressed (this gpumemrec reads at most " + std::to_string(kMaxDomFileBytes) +
                        " bytes)"};
      return false;
    }
    buf->insert(buf->end(), data, data + n);
  }
  if (in.failed) {
    *err = {path, stream_error(in.zstd_error, errno)};
    return false;
  }
  if (buf->empty()) {
    *err = {path, "empty file (truncated?)"};
    return false;
  }
  buf->push_back('\0');
  return true;
}

// The whole (small) file, NUL-terminated, for an in-situ DOM parse.
bool read_file(const std::string& path, std::vector<char>* buf, ReadError* err) {
  int fd = -1;
  size_t size = 0;
  if (!open_regular(path, kMaxDomFileBytes, &fd, &size, err)) return false;
  if (is_zstd_path(path)) {
    Fd closer{fd};
    return read_zstd_file(path, fd, size, buf, err);
  }
  buf->resize(size + 1);
  ssize_t n = pread_full(fd, buf->data(), size, 0);  // a file that grows meanwhile is cut at its size at open
  int e = errno;
  close(fd);
  if (n < 0) {
    *err = {path, std::string("read error: ") + strerror(e)};
    return false;
  }
  buf->resize(static_cast<size_t>(n) + 1);
  (*buf)[static_cast<size_t>(n)] = '\0';
  if (n == 0) {
    *err = {path, "empty file (truncated?)"};
    return false;
  }
  return true;
}

}  // namespace

std::string json_error(rapidjson::ParseErrorCode code, size_t offset, size_t len) {
  if (offset >= len || code == rapidjson::kParseErrorDocumentEmpty) {
    return "truncated JSON: unexpected end of file at byte " + std::to_string(offset) + " (" +
           rapidjson::GetParseError_En(code) + ")";
  }
  return "invalid JSON at byte " + std::to_string(offset) + ": " + rapidjson::GetParseError_En(code);
}

bool parse_dom(const std::string& path, std::vector<char>* buf, rapidjson::Document* doc,
               ReadError* err) {
  if (!read_file(path, buf, err)) return false;
  size_t len = buf->size() - 1;
  doc->ParseInsitu<rapidjson::kParseIterativeFlag>(buf->data());
  if (doc->HasParseError()) {
    *err = {path, json_error(doc->GetParseError(), doc->GetErrorOffset(), len)};
    return false;
  }
  return true;
}


std::string value_text(const Value& v) {
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  if (v.IsUint64()) return std::to_string(v.GetUint64());
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsDouble()) return std::to_string(v.GetDouble());
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsNull()) return "null";
  return "<complex>";
}

bool expect_object(const std::string& path, const rapidjson::Document& d, ReadError* err) {
  if (!d.IsObject()) {
    *err = {path, "expected a JSON object at top level"};
    return false;
  }
  return true;
}
bool expect_array(const std::string& path, const rapidjson::Document& d, ReadError* err) {
  if (!d.IsArray()) {
    *err = {path, "expected a JSON array at top level"};
    return false;
  }
  return true;
}

}  // namespace gpumemrec::model::read
