// Writing one bundle (docs/bundle-format.md is the contract), as named steps:
//   freeze -> snapshot -> model -> files:
//   1. (on the failing thread, before this) freeze.h copies the live tables
//      and cuts the ring;
//   2. finish_snapshot (dump_snapshot.h): the frozen state reconciled, one
//      consistent history;
//   3. symbolize the stacks and build the in-memory model (dump_model.h),
//      the tools' own (common/bundle_model.h);
//   4. one writer per file (bundle_files.h), from the model, every key from
//      the schema (common/bundle_keys.h): events.json (streamed from the
//      frozen events), allocations.json, stacks.json, metadata.json,
//      environment.json, summary.txt, then snapshot.pickle (optional) and
//      manifest.json last.
// When the verdict of an out-of-memory bundle comes after it was written,
// metadata.json, summary.txt and manifest.json are written again from the
// kept model (rewrite_verdict_files), each to a new file renamed over the
// old one: a reader sees the old file or the new one, never a mix.
// The caller (dumper.cpp) owns the directory, the temporary name and the
// publication (fsync, rename, prune, report).
#pragma once
#include <string>

#include "shim/dump/write/bundle_input.h"

namespace gpumemrec {

// Writes every file into the directory `dirfd`. False and *error on failure
// (the caller removes the directory). *build is left for rewrite_verdict_files.
bool write_bundle(int dirfd, const BundleInput& in, const FrozenState& frozen, Symbolizer& symbolizer,
                  WriteBuffer buf, BundleBuild* build, std::string* error);
// metadata.json, summary.txt, then manifest.json, written again with
// in.verdict, each renamed over the old one.
bool rewrite_verdict_files(int bundle_fd, const BundleInput& in, BundleBuild& build, WriteBuffer buf,
                           std::string* error);

}  // namespace gpumemrec
