// allocations.json and stacks.json: what is live and where it was allocated.
#include "common/autograd_node.h"
#include "common/bundle_read_files.h"


#include "common/bundle_read_json.h"
#include "common/bundle_schema.h"
#include "common/site_rules.h"

namespace gpumemrec::model::read {

// allocations.json ------------------------------------------------------------

bool read_allocations(const std::string& path, Bundle* b, ReadError* err) {
  std::vector<char> buf;
  rapidjson::Document d;
  if (!parse_dom(path, &buf, &d, err) || !expect_array(path, d, err)) return false;
  b->allocations.clear();
  b->allocations.reserve(d.Size());
  size_t i = 0;
  for (auto& v : d.GetArray()) {
    if (!v.IsObject()) {
      *err = {path, "allocation #" + std::to_string(i) + " is not a JSON object"};
      return false;
    }
    Fields f{path, "allocation #" + std::to_string(i) + ": ", err};
    Allocation a;
    if (!f.u64(v, key::kAddress, &a.address) || !f.u64(v, key::kSize, &a.size) ||
        !f.device(v, key::kDeviceId, &a.device_id) || !f.str(v, key::kApi, &a.api) ||
        !f.str(v, key::kMemoryType, &a.memory_type) || !f.dbl(v, key::kTimestamp, &a.timestamp) ||
        !f.num(v, key::kThreadId, &a.thread_id) || !f.u64(v, key::kStackId, &a.stack_id) ||
        !f.u64(v, key::kSeq, &a.seq))
      return false;
    b->allocations.push_back(std::move(a));
    ++i;
  }
  return true;
}

// stacks.json -----------------------------------------------------------------

bool read_frames(const std::string& path, const Value& v, size_t i, Stack* s, ReadError* err) {
  auto fr = v.FindMember(key::kFrames);
  if (fr != v.MemberEnd() && fr->value.IsArray()) {
    size_t j = 0;
    for (auto& fv : fr->value.GetArray()) {
      if (!fv.IsObject()) {
        *err = {path, "stack #" + std::to_string(i) + " frame #" + std::to_string(j) + " is not a JSON object"};
        return false;
      }
      Fields ff{path, "stack #" + std::to_string(i) + " frame #" + std::to_string(j) + ": ", err};
      Frame fm;
      std::string kind;
      if (!ff.str(fv, key::kKind, &kind) || !ff.str(fv, key::kModule, &fm.module) ||
          !ff.u64(fv, key::kOffset, &fm.offset) || !ff.str(fv, key::kFunction, &fm.function) ||
          !ff.str(fv, key::kFile, &fm.file) || !ff.i64(fv, key::kLine, &fm.line))
        return false;
      fm.kind = frame_kind_from_name(kind);
      s->frames.push_back(std::move(fm));
      ++j;
    }
  } else if (fr != v.MemberEnd() && !fr->value.IsNull()) {
    *err = {path, "stack #" + std::to_string(i) + ": " + key_text(key::kFrames) + " is not an array"};
    return false;
  }
  return true;
}

// "site_frame" and "library" (docs/bundle-format.md, stacks.json): read when
// the shim wrote them, computed by the same rules (common/site_rules.h, with
// this process's GPUMEMREC_SITE_SKIP) for bundles written before.
bool read_attribution(const std::string& path, const Value& v, size_t i, Stack* s, ReadError* err) {
  Fields f{path, "stack #" + std::to_string(i) + ": ", err};
  const bool stored = v.HasMember(key::kSiteFrame) && !v[key::kSiteFrame].IsNull();
  if (!f.i64(v, key::kSiteFrame, &s->site_frame) || !f.str(v, key::kLibrary, &s->library)) return false;
  if (!stored) {
    site::attribute(s, site::rules_from_environment());
    return true;
  }
  if (s->site_frame < -1 || s->site_frame >= int64_t(s->frames.size()) || (s->site_frame < 0 && !s->frames.empty())) {
    *err = {path, "stack #" + std::to_string(i) + ": " + key_text(key::kSiteFrame) + " (" +
                      std::to_string(s->site_frame) + ") is not the index of one of its " +
                      std::to_string(s->frames.size()) + " frames"};
    return false;
  }
  s->attributed = true;
  return true;
}

bool read_stacks(const std::string& path, Bundle* b, ReadError* err) {
  std::vector<char> buf;
  rapidjson::Document d;
  if (!parse_dom(path, &buf, &d, err) || !expect_array(path, d, err)) return false;
  b->stacks.clear();
  b->stacks.reserve(d.Size());
  size_t i = 0;
  for (auto& v : d.GetArray()) {
    if (!v.IsObject()) {
      *err = {path, "stack #" + std::to_string(i) + " is not a JSON object"};
      return false;
    }
    Fields f{path, "stack #" + std::to_string(i) + ": ", err};
    Stack s;
    if (!f.u64(v, key::kStackId, &s.stack_id) || !f.str(v, key::kPython, &s.python)) return false;
    if (!read_frames(path, v, i, &s, err) || !read_attribution(path, v, i, &s, err)) return false;
    // PyTorch's backward (common/autograd_node.h): the node is computed for
    // bundles written before the key existed.
    if (!f.u64(v, key::kPythonThread, &s.python_thread) || !f.str(v, key::kPythonBorrow, &s.python_borrow)) return false;
    if (v.HasMember(key::kAutogradNode)) {
      if (!f.str(v, key::kAutogradNode, &s.autograd_node)) return false;
    } else {
      s.autograd_node = autograd::node_of(s.frames);
    }
    b->stacks.push_back(std::move(s));
    ++i;
  }
  return true;
}

}  // namespace gpumemrec::model::read
