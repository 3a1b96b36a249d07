// stacks.json: from the symbolized stacks of the in-memory model.
#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

namespace {

void write_frame(JsonWriter& w, const model::Frame& fr) {
  w.StartObject();
  w.Key("kind"); w.String(fr.kind == model::FrameKind::kPython ? "python" : "native");
  w.Key("module"); w.String(fr.module);
  w.Key("offset"); w.Uint64(fr.offset);
  w.Key("function"); w.String(fr.function);
  w.Key("file"); w.String(fr.file);
  w.Key("line"); w.Int64(fr.line);
  w.EndObject();
}

}  // namespace

bool write_stacks_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  OutFile file(files, "stacks.json");
  if (file.ok()) {
    JsonWriter w(file.out());
    w.StartArray();
    for (const model::Stack& s : c.model.stacks) {
      w.StartObject();
      w.Key("stack_id"); w.Uint64(s.stack_id);
      w.Key("python"); w.String(s.python);
      w.Key("frames");
      w.StartArray();
      for (const model::Frame& fr : s.frames) write_frame(w, fr);
      w.EndArray();
      // Who holds the memory (common/site_rules.h).
      w.Key("site_frame"); s.site_frame >= 0 ? w.Int64(s.site_frame) : w.Null();
      w.Key("library"); w.String(s.library);
      w.EndObject();
    }
    w.EndArray();
  }
  return file.finish(error);
}

}  // namespace gpumemrec
