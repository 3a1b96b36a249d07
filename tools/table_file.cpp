#include "tools/table_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tools/cli.h"
#include "tools/output_file.h"

namespace gpumemrec::cli {

namespace {
// gzip level 1: a 1M-event events table is compressed at about the speed
// it is parsed; higher levels cost several times the time for a few
// percent of size (JSON Lines of the same keys compress well at any level).
constexpr const char* kGzMode = "wb1";
constexpr const char* kPlainMode = "wbT";  // zlib's transparent writing: the bytes as they are
constexpr size_t kFlushBytes = size_t(1) << 18;
}  // namespace

TableFile::TableFile(std::string path, const TableSchema& schema, bool gzip)
    : schema_(schema), path_(std::move(path)) {
  size_t slash = path_.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path_.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  tmp_ = dir + "." + base + "." + std::to_string(getpid()) + ".tmp";
  int fd = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) failure(tmp_ + ": cannot create: " + strerror(errno));
  gz_ = gzdopen(fd, gzip ? kGzMode : kPlainMode);
  if (!gz_) {
    close(fd);
    unlink(tmp_.c_str());
    failure(tmp_ + ": zlib could not start");
  }
  gzbuffer(gz_, 1 << 17);
  row_.reserve(kFlushBytes + 4096);
}

TableFile::~TableFile() {
  if (committed_) return;
  if (gz_) gzclose(gz_);
  unlink(tmp_.c_str());
}

void TableFile::key(std::string_view name) {
  if (column_ >= schema_.columns.size() || name != schema_.columns[column_].name)
    failure(std::string("internal error: column ") + std::string(name) + " of table " + schema_.name +
            " is not its schema's next one");
  ++column_;
  if (!first_) row_ += ',';
  first_ = false;
  row_ += '"';
  row_.append(name.data(), name.size());
  row_ += "\":";
}

void TableFile::str(std::string_view v) { json_escape(row_, v); }
void TableFile::raw(std::string_view json) { row_.append(json.data(), json.size()); }

void TableFile::u64(uint64_t v) {
  char b[24];
  int n = snprintf(b, sizeof b, "%" PRIu64, v);
  row_.append(b, static_cast<size_t>(n));
}

void TableFile::i64(int64_t v) {
  char b[24];
  int n = snprintf(b, sizeof b, "%" PRId64, v);
  row_.append(b, static_cast<size_t>(n));
}

void TableFile::dbl(double v) {
  if (v != v || v - v != 0) {  // NaN, infinity: not JSON
    null();
    return;
  }
  char b[32];
  int n = 0;
  for (int prec = 15; prec <= 17; ++prec) {  // the shortest text that reads back as v
    n = snprintf(b, sizeof b, "%.*g", prec, v);
    if (strtod(b, nullptr) == v) break;
  }
  row_.append(b, static_cast<size_t>(n));
}

void TableFile::end() {
  if (column_ != schema_.columns.size())
    failure(std::string("internal error: a row of table ") + schema_.name + " is short of its schema's columns");
  row_ += "}\n";
  ++rows_;
  if (row_.size() >= kFlushBytes) flush();
}

void TableFile::flush() {
  if (row_.empty()) return;
  if (gzwrite(gz_, row_.data(), static_cast<unsigned>(row_.size())) != static_cast<int>(row_.size()))
    failure(tmp_ + ": write failed");
  row_.clear();
}

void TableFile::commit() {
  flush();
  int rc = gzclose(gz_);
  gz_ = nullptr;
  if (rc != Z_OK) failure(tmp_ + ": write failed (disk full?)");
  if (rename(tmp_.c_str(), path_.c_str()) != 0) failure(path_ + ": cannot rename into place: " + strerror(errno));
  committed_ = true;
}

}  // namespace gpumemrec::cli
