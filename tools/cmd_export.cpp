// gpumemrec export --format memory-viz|chrome-trace BUNDLE -o FILE
// gpumemrec export --format tables DIR|BUNDLE... -o OUT (tools/export_tables.h)
#include <cstdio>
#include <memory>
#include <vector>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "tools/chrome_trace.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/export_tables.h"
#include "tools/parquet_writer.h"
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
  std::string table_format = "jsonl";
  std::vector<std::string> bundles;
  std::string output;
};

// Every bundle named, a directory of bundles standing for the bundles in it.
std::vector<std::string> expand_bundles(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (!is_bundle_dir(a) && is_directory(a)) {
      auto found = find_bundles(a);
      if (found.empty()) bad_input(a, "no bundles (oom_dump_*) in this directory");
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(a);
    }
  }
  return out;
}

// One bundle after another; a bad bundle is reported and skipped (the
// others are still exported), and the exit code says so.
int export_tables(const std::vector<std::string>& bundles, const std::string& out_dir, bool parquet) {
  size_t done = 0, skipped = 0;
  unsigned long long events = 0;
  std::unique_ptr<ParquetWriter> writer;
  if (parquet) writer = std::make_unique<ParquetWriter>();  // says so at once when there is no pyarrow
  prepare_tables_dir(out_dir);
  for (const auto& dir : bundles) {
    try {
      events += export_bundle_tables(dir, out_dir, writer.get()).events;
      ++done;
    } catch (const CliError& e) {
      if (e.code != kBadInput) throw;
      fprintf(stderr, "gpumemrec: skipped %s: %s\n", dir.c_str(), e.what());
      ++skipped;
    }
  }
  if (isatty(STDERR_FILENO) || skipped)
    fprintf(stderr, "gpumemrec: wrote %zu bundle(s), %llu events, to %s/{bundles,events,allocations,sites}/ (%s)\n",
            done, events, out_dir.c_str(), writer ? ("Parquet, " + writer->version()).c_str() : "gzip JSON Lines");
  if (skipped) throw CliError(kBadInput, std::to_string(skipped) + " bundle(s) could not be read (above)");
  return kOk;
}

void write_one(const ExportOptions& o) {
  Bundle b;
  Progress progress;
  load_bundle(o.bundles[0], &b, false, &progress);
  OutputFile out(o.output);
  if (o.format == "memory-viz") {
    MemvizPlan plan = build_memviz_plan(b);
    PickleWriter w(file_sink, &out);
    if (!write_memviz_pickle(b, plan, w)) failure(o.output + ": write failed");
    out.close();
    if (isatty(STDERR_FILENO)) {
      size_t n = 0;
      for (auto& t : plan.device_traces) n += t.size();
      fprintf(stderr, "gpumemrec: wrote %s: %zu segments, %zu trace entries on %zu device(s)\n", o.output.c_str(),
              plan.segments.size(), n, plan.device_traces.size());
    }
  } else {
    write_chrome_trace(b, out);
    out.close();
  }
}

}  // namespace

RunFn add_export(CLI::App& root) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* app = root.add_subcommand("export", "Convert a bundle for other viewers (PyTorch memory_viz, Perfetto)");
  app->add_option("--format,-f", o->format,
                  "memory-viz (PyTorch snapshot pickle), chrome-trace (Trace Event JSON) or tables (for DuckDB, Spark, "
                  "pandas, polars, Dask)")
      ->required()
      ->check(CLI::IsMember({"memory-viz", "chrome-trace", "tables"}));
  app->add_option("--table-format", o->table_format,
                  "tables: jsonl (gzip JSON Lines, the default: needs nothing) or parquet (written by pyarrow: "
                  "GPUMEMREC_PYTHON, else python3)")
      ->check(CLI::IsMember({"jsonl", "parquet"}));
  app->add_option("BUNDLE", o->bundles, "Bundle directory (tables: bundles, or directories of bundles)")->required();
  app->add_option("-o,--output", o->output, "Output file ('-' for stdout); tables: output directory")->required();
  app->footer(
      "memory-viz: a protocol-2 pickle of PyTorch's snapshot dict (segments + device_traces); open it at\n"
      "  https://pytorch.org/memory_viz or with python -m torch.cuda._memory_viz trace_plot FILE -o out.html\n"
      "chrome-trace: open in https://ui.perfetto.dev or chrome://tracing\n"
      "tables: OUT/{bundles,events,allocations,sites}/<bundle>.jsonl.gz (or .parquet), every row with bundle_id,\n"
      "  the columns' types in OUT/schema.json; e.g.\n"
      "  duckdb -c \"SELECT rank, site FROM 'OUT/bundles/*.jsonl.gz' ORDER BY time\" (docs/fleet.md)");
  return [=]() -> int {
    if (o->format == "tables")
      return export_tables(expand_bundles(o->bundles), o->output, o->table_format == "parquet");
    if (o->table_format != "jsonl") bad_input("--table-format", "only for --format tables");
    if (o->bundles.size() != 1) bad_input(o->bundles[1], "--format " + o->format + " converts one bundle");
    write_one(*o);
    return kOk;
  };
}

}  // namespace gpumemrec::cli
