#include "tools/output_file.h"

#include <cerrno>
#include <cstring>

#include "tools/cli.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {

OutputFile::OutputFile(const std::string& path) : path_(path) {
  if (path == "-") {
    f_ = stdout;
    is_stdout_ = true;
    return;
  }
  f_ = fopen(path.c_str(), "wb");
  if (!f_) failure(path + ": cannot write: " + strerror(errno));
  setvbuf(f_, nullptr, _IOFBF, 1 << 20);
}

OutputFile::~OutputFile() {
  if (f_ && !is_stdout_) fclose(f_);
}

void OutputFile::write(const void* p, size_t n) {
  if (n && fwrite(p, 1, n, f_) != n) failed_ = true;
}

void OutputFile::write(std::string_view s) { write(s.data(), s.size()); }

void OutputFile::close() {
  if (!f_) return;
  bool bad = failed_ || ferror(f_) || fflush(f_) != 0;
  int e = errno;
  if (!is_stdout_ && fclose(f_) != 0) bad = true;
  f_ = nullptr;
  if (bad) failure(path_ + ": write failed: " + strerror(e ? e : EIO));
}

void json_escape(std::string& out, std::string_view s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '<': out += "\\u003c"; break;  // safe inside <script>
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace gpumemrec::cli
