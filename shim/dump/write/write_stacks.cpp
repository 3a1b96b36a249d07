// stacks.json: from the symbolized stacks of the in-memory model.
#include "shim/dump/write/bundle_files.h"

namespace gpumemrec {

namespace {

void write_frame(JsonWriter& w, const model::Frame& fr) {
  w.StartObject();
  w.Key(key::kKind); w.String(frame_kind_name(fr.kind));
  w.Key(key::kModule); w.String(fr.module);
  w.Key(key::kOffset); w.Uint64(fr.offset);
  w.Key(key::kFunction); w.String(fr.function);
  w.Key(key::kFile); w.String(fr.file);
  w.Key(key::kLine); w.Int64(fr.line);
  w.EndObject();
}

}  // namespace

bool write_stacks_json(BundleFiles& files, const BundleContent& c, std::string* error) {
  OutFile file(files, file::kStacks, true);
  if (file.ok()) {
    JsonWriter w(file.out());
    w.StartArray();
    for (const model::Stack& s : c.model.stacks) {
      w.StartObject();
      w.Key(key::kStackId); w.Uint64(s.stack_id);
      w.Key(key::kPython); w.String(s.python);
      w.Key(key::kFrames);
      w.StartArray();
      for (const model::Frame& fr : s.frames) write_frame(w, fr);
      w.EndArray();
      // Who holds the memory (common/site_rules.h).
      w.Key(key::kSiteFrame); s.site_frame >= 0 ? w.Int64(s.site_frame) : w.Null();
      w.Key(key::kLibrary); w.String(s.library);
      // PyTorch's backward (common/autograd_node.h); only when known.
      if (s.has_lender()) { w.Key(key::kPythonThread); w.Uint64(s.python_thread); }
      if (!s.python_borrow.empty()) { w.Key(key::kPythonBorrow); w.String(s.python_borrow); }
      if (!s.autograd_node.empty()) { w.Key(key::kAutogradNode); w.String(s.autograd_node); }
      w.EndObject();
    }
    w.EndArray();
  }
  return file.finish(error);
}

}  // namespace gpumemrec
