// gpumemrec ls [DIR]: the bundles in a dump directory, newest first.
#include <algorithm>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "tools/cli.h"
#include "tools/commands.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {

RunFn add_ls(CLI::App& root) {
  auto dir = std::make_shared<std::string>("./gpumemrec-dumps");
  CLI::App* app = root.add_subcommand("ls", "List the bundles in a dump directory, newest first");
  app->add_option("DIR", *dir, "Dump directory")->capture_default_str();
  app->footer("Columns: time of the failure (UTC), host, pid, rank, reason, API, size asked, live bytes, bundle.\n"
              "Directories named .tmp-* (bundles being written) are skipped.");
  return [=]() -> int {
    if (!is_directory(*dir)) bad_input(*dir, is_bundle_dir(*dir) ? "not a directory" : "no such directory");
    std::vector<std::string> paths = is_bundle_dir(*dir) ? std::vector<std::string>{*dir} : find_bundles(*dir);
    struct Row {
      double ts;
      std::vector<std::string> cells;
    };
    std::vector<Row> rows;
    for (const auto& p : paths) {
      Bundle b;
      try {
        load_bundle(p, &b, /*light=*/true);
      } catch (const CliError& e) {
        rows.push_back({0, {"-", "-", "-", "-", "-", "-", "-", "-", basename_of(p) + "  (unreadable: " + e.what() + ")"}});
        continue;
      }
      const Metadata& m = b.metadata;
      std::string pid = std::to_string(b.manifest.pid ? b.manifest.pid : b.environment.pid);
      std::string host = b.hostname();
      rows.push_back({m.timestamp,
                      {utc_time(m.timestamp), host.empty() ? "-" : host, pid, m.rank ? std::to_string(*m.rank) : "-",
                       m.reason.empty() ? b.manifest.reason : m.reason, m.api.empty() ? "-" : m.api,
                       m.requested_bytes ? human_bytes(m.requested_bytes) : "-", human_bytes(m.live_bytes),
                       basename_of(p)}});
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ts > b.ts; });
    if (rows.empty()) {
      fprintf(stderr, "gpumemrec: no bundles in %s\n", dir->c_str());
      return kOk;
    }
    Table t({"TIME", "HOST", "PID", "RANK", "REASON", "API", "ASKED", "LIVE", "BUNDLE"}, "llrrllrrl");
    for (auto& r : rows) t.add(std::move(r.cells));
    fputs(t.render().c_str(), stdout);
    return kOk;
  };
}

}  // namespace gpumemrec::cli
