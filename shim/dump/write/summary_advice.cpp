#include "shim/dump/write/summary_advice.h"

#include "common/advice.h"
#include "common/framework_roles.h"
#include "common/roles.h"
#include "shim/record/recorder.h"

namespace gpumemrec {

namespace {

void write_lines(FdOut& o, const std::vector<std::string>& lines) {
  if (lines.empty()) return;
  o.write("\n");
  for (const std::string& l : lines) {
    o.write(l.c_str());
    o.write("\n");
  }
}

// GPUMEMREC_LIMIT for the bundle's device, as the recorder parsed it.
void add_limit(const BundleContent& c, model::AdviceInput* in) {
  const int dev = c.model.metadata.device_id;
  if (!c.in.recorder || !c.in.recorder->cfg.has_limit || dev < 0 || dev >= kMaxDevices) return;
  const uint64_t limit = c.in.recorder->cfg.limit_bytes[dev];
  if (!limit) return;
  in->limit_bytes = limit;  // the variable's own text is in environment.json
}

// The sections' lines, computed before anything is written.
std::vector<std::vector<std::string>> sections(const BundleContent& c) {
  std::vector<std::vector<std::string>> out;
  const FrameworkReport* f = c.in.framework.get();
  FrameworkExtras extras;
  model::AdviceInput in;
  if (f) {
    extras = parse_framework_extras(f->digest.data(), f->digest.size());
    in.framework.digest = &f->fields;
    in.framework.extras = &extras;
  }
  if (in.framework.usable_roles())
    for (const model::RoleTable& t : model::role_tables(c.model, in.framework))
      if (t.roles_from.rfind("framework roles", 0) == 0) out.push_back(model::role_lines(t));
  add_limit(c, &in);
  out.push_back(model::advice_lines(model::advise(c.model, in)));
  return out;
}

}  // namespace

void write_summary_advice(FdOut& o, const BundleContent& c) {
  std::vector<std::vector<std::string>> lines;
  try {
    lines = sections(c);
  } catch (...) {  // out of memory: summary.txt without them
    o.write("\n(What to try: left out, the host was short of memory)\n");
    return;
  }
  for (const auto& l : lines) write_lines(o, l);
}

}  // namespace gpumemrec
