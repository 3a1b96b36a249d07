// Small file helpers shared by the unit tests that write bundles or files:
// a fresh directory, a directory listing, a whole file, a JSON document.
#pragma once
#include <dirent.h>
#include <rapidjson/document.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace unit_files {

inline std::string make_tmpdir() {
  char tmpl[] = "/tmp/gpumemrec-unit-XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? d : "";
}

// Every entry but "." and "..", sorted.
inline std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") out.push_back(name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Parsed; a parse error is a test failure (and an empty document).
inline rapidjson::Document read_json(const std::string& path) {
  const std::string text = read_text(path);
  rapidjson::Document d;
  d.Parse(text.c_str(), text.size());
  if (d.HasParseError()) d.SetNull();
  return d;
}

}  // namespace unit_files
