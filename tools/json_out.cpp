#include "tools/json_out.h"

#include <cstdio>

#include "common/autograd_node.h"
#include "common/names.h"
#include "common/site_rules.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {

void json_kv(JsonWriter& w, const char* key, const std::string& v) {
  w.Key(key);
  w.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
}
void json_kv(JsonWriter& w, const char* key, uint64_t v) {
  w.Key(key);
  w.Uint64(v);
}
void json_kv(JsonWriter& w, const char* key, int64_t v) {
  w.Key(key);
  w.Int64(v);
}
void json_kv(JsonWriter& w, const char* key, double v) {
  w.Key(key);
  w.Double(v);
}
void json_kv(JsonWriter& w, const char* key, const std::optional<uint64_t>& v) {
  w.Key(key);
  if (v) w.Uint64(*v);
  else w.Null();
}

void json_kv(JsonWriter& w, const char* key, const std::optional<int64_t>& v) {
  w.Key(key);
  if (v) w.Int64(*v);
  else w.Null();
}

void json_kv_or_null(JsonWriter& w, const char* key, const std::string& v) {
  if (v.empty()) {
    w.Key(key);
    w.Null();
  } else {
    json_kv(w, key, v);
  }
}

void json_frame(JsonWriter& w, const Frame& f) {
  w.StartObject();
  json_kv(w, "kind", std::string(f.kind == FrameKind::kPython ? "python" : f.kind == FrameKind::kNative ? "native" : "other"));
  json_kv(w, "function", f.function);
  json_kv(w, "short", names::frame_label(f, false));
  json_kv(w, "file", f.file);
  json_kv(w, "line", static_cast<int64_t>(f.line));
  json_kv(w, "module", f.module);
  json_kv(w, "offset", f.offset);
  w.EndObject();
}

void json_frames(JsonWriter& w, const std::vector<Frame>& frames, size_t max_frames) {
  w.Key("frames");
  w.StartArray();
  for (size_t i = 0; i < frames.size() && i < max_frames; ++i) json_frame(w, frames[i]);
  w.EndArray();
}

void json_site(JsonWriter& w, const Stack* s) {
  w.Key("site");
  const Frame* f = s ? site::site_frame_of(*s) : nullptr;
  if (!f) {
    w.Null();
    return;
  }
  w.StartObject();
  w.Key("frame");
  json_frame(w, *f);
  json_kv(w, "index", static_cast<int64_t>(f - s->frames.data()));
  json_kv_or_null(w, "library", s->library);
  json_kv_or_null(w, "autograd_node", s->autograd_node);
  json_kv_or_null(w, "note", autograd::site_note(*s));
  w.EndObject();
}

void json_stack(JsonWriter& w, const Bundle& b, uint64_t stack_id, size_t max_frames) {
  const Stack* s = stack_id ? b.find_stack(stack_id) : nullptr;
  json_site(w, s);
  json_kv(w, "python", s ? s->python : std::string());
  if (s && s->has_lender()) json_kv(w, "python_thread", s->python_thread);
  json_frames(w, s ? s->frames : std::vector<Frame>{}, max_frames);
}

void print_json(const rapidjson::StringBuffer& buf) {
  fwrite(buf.GetString(), 1, buf.GetSize(), stdout);
  fputc('\n', stdout);
}

}  // namespace gpumemrec::cli
