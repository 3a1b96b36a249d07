#include "common/bundle_model.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <new>

#include <sys/mman.h>

namespace gpumemrec::model {

namespace {
constexpr size_t kBigBlock = 32u << 20;
constexpr size_t kHuge = 2u << 20;
}  // namespace

void* big_alloc(size_t bytes) {
  if (bytes < kBigBlock) {
    void* p = std::malloc(bytes ? bytes : 1);
    if (!p) throw std::bad_alloc();
    return p;
  }
  size_t len = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  madvise(p, len, MADV_HUGEPAGE);
#endif
  return p;
}

void big_discard(void* p, size_t bytes, size_t prefix) {
  if (!p || bytes < kBigBlock) return;
  size_t whole = prefix / kHuge * kHuge;  // the block starts on a 2 MiB multiple of its mapping
  if (whole) madvise(p, whole, MADV_DONTNEED);
}

void big_free(void* p, size_t bytes) {
  if (!p) return;
  if (bytes < kBigBlock) {
    std::free(p);
    return;
  }
  munmap(p, (bytes + kHuge - 1) / kHuge * kHuge);
}

uint16_t StringTable::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  if (strings_.size() >= 0xFFFF) return 0;  // pathological input: collapse to ""
  strings_.push_back(std::make_unique<std::string>(s));
  uint16_t id = static_cast<uint16_t>(strings_.size() - 1);
  index_.emplace(std::string_view(*strings_.back()), id);
  return id;
}

std::string Bundle::outcome() const {
  const std::string& md = metadata.outcome;
  const std::string& mf = manifest.outcome;
  if (!md.empty() && md != "unknown") return md;
  if (!mf.empty() && mf != "unknown") return mf;
  return md.empty() ? mf : md;
}

std::string Bundle::outcome_detail() const {
  return outcome() == metadata.outcome ? metadata.outcome_detail : std::string();
}

std::string format_frame(const Frame& f) {
  if (!f.function.empty()) {
    std::string s = f.function;
    if (!f.file.empty()) {
      s += " (";
      s += f.file;
      if (f.line > 0) s += ":" + std::to_string(f.line);
      s += ")";
    } else if (f.kind == FrameKind::kNative && !f.module.empty()) {
      size_t slash = f.module.rfind('/');
      s += " (" + f.module.substr(slash == std::string::npos ? 0 : slash + 1) + ")";
    }
    return s;
  }
  if (!f.file.empty()) {
    std::string s = "?? (" + f.file;
    if (f.line > 0) s += ":" + std::to_string(f.line);
    return s + ")";
  }
  size_t slash = f.module.rfind('/');
  std::string mod = f.module.empty() ? "??" : f.module.substr(slash == std::string::npos ? 0 : slash + 1);
  char buf[32];
  snprintf(buf, sizeof buf, "+0x%" PRIx64, f.offset);
  return mod + buf;
}

}  // namespace gpumemrec::model
