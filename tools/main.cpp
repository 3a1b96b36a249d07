// gpumemrec: the command-line tool around libgpumemrec.so.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/cli.h"
#include "tools/commands.h"

using namespace gpumemrec::model;  // the tools' bundle model

using namespace gpumemrec::cli;

static const char* kFooter = R"(Exit codes:
  0  success
  1  failure (could not write the output, libgpumemrec.so not found, ...)
  2  bad input (bad arguments, missing file, not a bundle, truncated or
     corrupt JSON, unsupported schema_version, an SQL error in 'query')
  gpumemrec run exits with the program's own exit code (128+N if it was
  killed by signal N).

Run 'gpumemrec SUBCOMMAND --help' for the options of each subcommand.
See docs/cli.md for examples and the SQL schema of 'gpumemrec query'.)";

static int real_main(int argc, char** argv) {
  // `gpumemrec run [options] -- CMD ARGS...`: everything after the first
  // "--" is the program to run, untouched by the option parser.
  std::vector<std::string> dashdash;
  int parse_argc = argc;
  if (argc > 1 && strcmp(argv[1], "run") == 0) {
    for (int i = 2; i < argc; ++i) {
      if (strcmp(argv[i], "--") == 0) {
        parse_argc = i;
        for (int j = i + 1; j < argc; ++j) dashdash.emplace_back(argv[j]);
        break;
      }
    }
  }

  CLI::App app{"gpumemrec: GPU out-of-memory flight recorder (records GPU allocations, dumps a bundle on OOM)",
               "gpumemrec"};
  app.footer(kFooter);
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpumemrec 0.1.0");

  struct Entry {
    CLI::App* sub;
    RunFn fn;
  };
  std::vector<Entry> entries;
  auto reg = [&](const char* name, RunFn fn) { entries.push_back({app.get_subcommand(name), std::move(fn)}); };
  reg("run", add_run(app, &dashdash));
  reg("ls", add_ls(app));
  reg("report", add_report(app));
  reg("html", add_html(app));
  reg("export", add_export(app));
  reg("query", add_query(app));
  reg("diff", add_diff(app));
  reg("simulate", add_simulate(app));
  reg("top", add_top(app));

  try {
    app.parse(parse_argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message
    return kBadInput;
  }
  for (auto& e : entries)
    if (e.sub->parsed()) return e.fn();
  return kBadInput;
}

int main(int argc, char** argv) {
  try {
    return real_main(argc, argv);
  } catch (const CliError& e) {
    fflush(stdout);
    fprintf(stderr, "gpumemrec: error: %s\n", e.what());
    return e.code;
  } catch (const std::bad_alloc&) {
    fflush(stdout);
    fprintf(stderr, "gpumemrec: error: out of host memory\n");
    return kFailure;
  } catch (const std::exception& e) {
    fflush(stdout);
    fprintf(stderr, "gpumemrec: error: %s\n", e.what());
    return kFailure;
  } catch (...) {
    fflush(stdout);
    fprintf(stderr, "gpumemrec: error: unexpected failure\n");
    return kFailure;
  }
}
