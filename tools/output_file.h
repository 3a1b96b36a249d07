// A buffered output file ("-" = stdout) whose errors become CliError(1).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace gpumemrec::cli {

class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  void write(std::string_view s);
  void write(const void* p, size_t n);
  FILE* file() { return f_; }
  void close();  // throws on error
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  FILE* f_ = nullptr;
  bool is_stdout_ = false;
  bool failed_ = false;
};

// Appends s to out as a JSON string literal (with quotes).
void json_escape(std::string& out, std::string_view s);

}  // namespace gpumemrec::cli
