#include "tools/parquet_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tools/cli.h"

extern char** environ;

namespace gpumemrec::cli {

namespace {

// The helper: argv[1] is schema_json(); then one request per input line,
// {"table": name, "src": jsonl, "dst": parquet}, one reply line each
// ("ok ROWS" or "error: WHY"). pyarrow: pyarrow.json.open_json (a
// streaming reader; ParseOptions(explicit_schema, unexpected_field_behavior))
// and pyarrow.parquet.ParquetWriter. Blocks of 1 MiB of JSON, read on one
// thread, written in row groups of 65,536 rows: the writer's memory stays
// about 150 MiB whatever the file (a 1,000,000-event table: 630 MiB with
// 32 MiB blocks, the same CPU time; docs/performance.md).
constexpr const char* kScript = R"PY(
import json, os, sys
def reply(text):
    sys.stdout.write(" ".join(str(text).split()) + "\n")
    sys.stdout.flush()
try:
    import pyarrow as pa, pyarrow.json as pj, pyarrow.parquet as pq
except ImportError as exc:
    reply("error: %s has no pyarrow (%s)" % (sys.executable, exc))
    sys.exit(0)
TYPES = {"string": pa.string(), "int64": pa.int64(), "uint64": pa.uint64(), "double": pa.float64(),
         "bool": pa.bool_(), "list<string>": pa.list_(pa.string())}
spec = json.loads(sys.argv[1])
meta = {b"gpumemrec.tables_version": str(spec["tables_version"]).encode()}
schemas = {n: pa.schema([(c, TYPES[t]) for c, t in cols], metadata=meta) for n, cols in spec["tables"].items()}
READ, GROUP_ROWS = pj.ReadOptions(block_size=1 << 20, use_threads=False), 65536
reply("ready pyarrow %s" % pa.__version__)
for line in sys.stdin:
    req, tmp = json.loads(line), None
    try:
        schema = schemas[req["table"]]
        folder, name = os.path.split(req["dst"])
        tmp = os.path.join(folder, ".%s.%d.tmp" % (name, os.getpid()))
        rows, group, pending = 0, [], 0
        with pq.ParquetWriter(tmp, schema, compression="zstd") as out:
            if os.path.getsize(req["src"]):
                reader = pj.open_json(req["src"], read_options=READ,
                                      parse_options=pj.ParseOptions(explicit_schema=schema,
                                                                    unexpected_field_behavior="error"))
                for batch in reader:
                    group.append(batch)
                    rows, pending = rows + batch.num_rows, pending + batch.num_rows
                    if pending >= GROUP_ROWS:
                        out.write_table(pa.Table.from_batches(group, schema))
                        group, pending = [], 0
            if group:
                out.write_table(pa.Table.from_batches(group, schema))
        os.rename(tmp, req["dst"])
        reply("ok %d" % rows)
    except Exception as exc:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        reply("error: %s: %s" % (type(exc).__name__, exc))
)PY";

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

ParquetWriter::ParquetWriter() {
  const char* env = getenv("GPUMEMREC_PYTHON");
  python_ = env && *env ? env : "python3";
  const std::string advice =
      "; set GPUMEMREC_PYTHON to a Python that has pyarrow, or leave out --table-format parquet (JSON Lines "
      "needs nothing)";
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) failure(std::string("pipe: ") + strerror(errno));
  signal(SIGPIPE, SIG_IGN);  // a helper that dies is said by its missing reply, not by a signal
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  const std::string schema = schema_json();
  char* argv[] = {const_cast<char*>(python_.c_str()), const_cast<char*>("-c"), const_cast<char*>(kScript),
                  const_cast<char*>(schema.c_str()), nullptr};
  int rc = posix_spawnp(&pid_, python_.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    pid_ = -1;
    failure("--table-format parquet runs " + python_ + " with pyarrow, and " + python_ + " could not be run (" +
            strerror(rc) + ")" + advice);
  }
  to_ = fdopen(in[1], "w");
  from_ = fdopen(out[0], "r");
  std::string first = reply();
  if (first.rfind("ready ", 0) != 0) {
    if (first.rfind("error: ", 0) == 0) first = first.substr(7);
    failure("--table-format parquet: " + (first.empty() ? python_ + " ended without a word" : first) + advice);
  }
  version_ = first.substr(6);
}

ParquetWriter::~ParquetWriter() {
  if (to_) fclose(to_);
  if (from_) fclose(from_);
  if (pid_ > 0) {
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string ParquetWriter::reply() {
  std::string line;
  int c;
  while ((c = fgetc(from_)) != EOF && c != '\n') line += char(c);
  return line;
}

uint64_t ParquetWriter::convert(const TableSchema& t, const std::string& src, const std::string& dst) {
  std::string req = "{\"table\": " + json_string(t.name) + ", \"src\": " + json_string(src) +
                    ", \"dst\": " + json_string(dst) + "}\n";
  if (fputs(req.c_str(), to_) < 0 || fflush(to_) != 0) failure(dst + ": the Parquet writer (" + python_ + ") ended");
  std::string r = reply();
  if (r.rfind("ok ", 0) != 0)
    failure(dst + ": " + (r.empty() ? "the Parquet writer (" + python_ + ") ended" : r.substr(r.find(' ') + 1)));
  return strtoull(r.c_str() + 3, nullptr, 10);
}

}  // namespace gpumemrec::cli
