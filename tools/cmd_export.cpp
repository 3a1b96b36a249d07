// gpumemrec export --format memory-viz|chrome-trace BUNDLE -o FILE
#include <cstdio>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "tools/chrome_trace.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "common/memviz_snapshot.h"
#include "tools/output_file.h"
#include "common/pickle_writer.h"

using namespace gpumemrec::model;  // the tools' bundle model

namespace gpumemrec::cli {
namespace {

bool file_sink(void* ctx, const uint8_t* data, size_t n) {
  static_cast<OutputFile*>(ctx)->write(data, n);
  return !ferror(static_cast<OutputFile*>(ctx)->file());
}

struct ExportOptions {
  std::string format;
  std::string bundle;
  std::string output;
};

}  // namespace

RunFn add_export(CLI::App& root) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* app = root.add_subcommand("export", "Convert a bundle for other viewers (PyTorch memory_viz, Perfetto)");
  app->add_option("--format,-f", o->format, "memory-viz (PyTorch snapshot pickle) or chrome-trace (Trace Event JSON)")
      ->required()
      ->check(CLI::IsMember({"memory-viz", "chrome-trace"}));
  app->add_option("BUNDLE", o->bundle, "Bundle directory")->required();
  app->add_option("-o,--output", o->output, "Output file ('-' for stdout)")->required();
  app->footer(
      "memory-viz: a protocol-2 pickle of PyTorch's snapshot dict (segments + device_traces); open it at\n"
      "  https://pytorch.org/memory_viz or with python -m torch.cuda._memory_viz trace_plot FILE -o out.html\n"
      "chrome-trace: open in https://ui.perfetto.dev or chrome://tracing");
  return [=]() -> int {
    Bundle b;
    Progress progress;
    load_bundle(o->bundle, &b, false, &progress);
    OutputFile out(o->output);
    if (o->format == "memory-viz") {
      MemvizPlan plan = build_memviz_plan(b);
      PickleWriter w(file_sink, &out);
      if (!write_memviz_pickle(b, plan, w)) failure(o->output + ": write failed");
      out.close();
      if (isatty(STDERR_FILENO)) {
        size_t n = 0;
        for (auto& t : plan.device_traces) n += t.size();
        fprintf(stderr, "gpumemrec: wrote %s: %zu segments, %zu trace entries on %zu device(s)\n", o->output.c_str(),
                plan.segments.size(), n, plan.device_traces.size());
      }
    } else {
      write_chrome_trace(b, out);
      out.close();
    }
    return kOk;
  };
}

}  // namespace gpumemrec::cli
