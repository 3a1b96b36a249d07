// gpumemrec diff OLD NEW: live bytes per call site, grown / new / gone.
// OLD and NEW are bundles or directories of bundles (all ranks summed).
#include <cstdio>

#include <CLI/CLI.hpp>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/diff_output.h"
#include "tools/json_out.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

struct DiffOptions {
  std::string old_path, new_path;
  size_t top = 20;
  size_t frames = 4;
  bool json = false;
  bool verbose = false;
  bool all = false;
};

}  // namespace

RunFn add_diff(CLI::App& root) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* app = root.add_subcommand("diff", "Compare live bytes per call site between two bundles (or directories)");
  app->add_option("OLD", o->old_path, "Baseline: a bundle or a directory of bundles")->required();
  app->add_option("NEW", o->new_path, "The bundle (or directory) to compare with it")->required();
  app->add_option("--top", o->top, "Sites to show")->capture_default_str();
  app->add_option("--frames", o->frames, "Frames shown per site")->capture_default_str();
  app->add_flag("--all", o->all, "Also list sites whose live bytes did not change");
  app->add_flag("--json", o->json, "Print one JSON object (keys: see docs/cli.md)");
  app->add_flag("-v,--verbose", o->verbose, "Full C++ names and file paths");
  app->footer("Sites are matched by their symbolized frames (function, file, line; module+offset when there is\n"
              "no symbol), not by stack id or address, which differ between runs. A directory counts the live\n"
              "allocations of all its bundles together. Sorted by growth, largest first.");
  return [=]() -> int {
    diff::SiteTotals old_side, new_side;
    RoleTotals old_roles, new_roles;
    load_side(o->old_path, &old_side, &old_roles);
    load_side(o->new_path, &new_side, &new_roles);
    auto deltas = diff::compare(old_side, new_side);
    DiffPrintOptions p{o->top, o->frames, o->verbose, o->all};
    if (o->json) {
      rapidjson::StringBuffer buf;
      JsonWriter w(buf);
      write_diff_json(w, old_side, new_side, deltas, p, &old_roles, &new_roles);
      print_json(buf);
    } else {
      fputs(diff_text(old_side, new_side, deltas, p).c_str(), stdout);
      const std::string roles = role_diff_text(old_roles, new_roles);
      if (!roles.empty()) fputs(("\n" + roles).c_str(), stdout);
    }
    return kOk;
  };
}

}  // namespace gpumemrec::cli
