// gpumemrec html BUNDLE -o report.html [--baseline OTHER]: one
// self-contained HTML report (inline CSS and JS, no network). The data
// comes from tools/html_data.cpp, the page from tools/html_template.h.
#include <CLI/CLI.hpp>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/diff_output.h"
#include "tools/html_data.h"
#include "tools/html_template.h"
#include "tools/output_file.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

struct HtmlOptions {
  std::string bundle;
  std::string baseline;
  std::string output = "gpumemrec-report.html";
};

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '<' ? "&lt;" : c == '&' ? "&amp;" : std::string(1, c);
  return o;
}

void write_page(const Bundle& b, const std::string& data, const std::string& path) {
  std::string head = kHtmlHead;
  std::string title = "gpumemrec report: " + (b.manifest.bundle_name.empty() ? basename_of(b.path) : b.manifest.bundle_name);
  size_t p = head.find("@@TITLE@@");
  if (p != std::string::npos) head.replace(p, 9, html_escape(title));
  OutputFile out(path);
  out.write(head);
  out.write(data);
  out.write(kHtmlTail);
  out.close();
}

}  // namespace

RunFn add_html(CLI::App& root) {
  auto o = std::make_shared<HtmlOptions>();
  CLI::App* app = root.add_subcommand("html", "Write a self-contained HTML report (no network needed to view it)");
  app->add_option("BUNDLE", o->bundle, "Bundle directory")->required();
  app->add_option("-o,--output", o->output, "Output HTML file ('-' for stdout)")->capture_default_str();
  app->add_option("--baseline", o->baseline, "A bundle (or directory of bundles) to compare with: adds the 'gpumemrec diff' view");
  app->footer("The page shows memory over time per device (downsampled to ~2000 points, min/max per bucket) with\n"
              "OOMs marked (recovered ones apart), a flame graph (icicle) of live bytes by call path with search,\n"
              "where a click narrows the tables to that call path, sortable tables of sites and of the 2000\n"
              "largest live allocations, and the stack of whatever you click.");
  return [=]() -> int {
    if (!is_bundle_dir(o->bundle) && is_directory(o->bundle) && !find_bundles(o->bundle).empty())
      bad_input(o->bundle, "is a directory of bundles; give one bundle (see 'gpumemrec ls " + o->bundle + "')");
    diff::SiteTotals base, self;
    if (!o->baseline.empty()) load_side(o->baseline, &base);
    Bundle b;
    Progress progress;
    load_bundle(o->bundle, &b, false, &progress);
    if (progress.enabled()) progress.update("writing HTML", 0.5);
    if (!o->baseline.empty()) self.add(b);
    std::string data = build_html_data(b, o->baseline.empty() ? nullptr : &base, o->baseline.empty() ? nullptr : &self);
    write_page(b, data, o->output);
    progress.done();
    return kOk;
  };
}

}  // namespace gpumemrec::cli
