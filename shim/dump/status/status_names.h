// Names for the status region's sites, in the terms of `gpumemrec report`:
// each stack made into the tools' model (query/stack_model.h), its site
// frame and owning library found by the bundle's own rules
// (common/site_rules.h, with this process's GPUMEMREC_SITE_SKIP), its label
// the report's (common/names.h, frame_label), and stacks grouped into sites
// by the report's key (common/live_sites.h, live_site_key).
//
// Only while someone watches (`top` writes a deadline into the region) and
// only stacks not named before: a stack never changes, so its name is kept
// (until a library is unloaded: then its addresses may mean something
// else, and every name goes). What differs from a bundle's symbolization is
// cost only: a native frame in a module the site rules class as runtime,
// framework, system or glue is named by its module and offset, without
// reading that module's symbol table (libtorch_cuda.so's alone is hundreds
// of MiB): no rule looks at such a frame's function, except when every
// frame of a stack is skipped and such a frame is the site, and then the
// stack is named again with every frame symbolized.
//
// On a thread of its own ("gpumemrec-names"), started when names are first
// asked for and gone after kIdleSeconds without a request: libdw's first
// look at the process and at a module's tables takes tens of milliseconds
// and more on a busy machine, and the peak keeper, whose thread asks, must
// read the ring before it wraps (at a million events a second the default
// ring wraps every 65 ms; naming on the keeper's thread lost it events:
// docs/performance.md, "The status region"). The keeper hands the stacks
// over and groups with the names there are; nothing it does waits for a
// name.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/site_rules.h"
#include "shim/base/spinlock.h"
#include "shim/dump/query/symbolizer.h"
#include "shim/dump/status/status_figures.h"

namespace gpumemrec {

struct Recorder;

struct SiteFigure {
  uint64_t bytes = 0, count = 0, stack_id = 0;
  uint32_t stacks = 0;
  bool named = false;
  std::string label, library;
};

class SiteNamer {
 public:
  SiteNamer(Recorder* r, std::vector<std::string> skip_patterns);
  SiteNamer(const SiteNamer&) = delete;
  SiteNamer& operator=(const SiteNamer&) = delete;

  // The keeper: `stacks` (largest first) are to be named; returns at once.
  void request(const std::vector<StackFigure>& stacks);
  // The keeper: `stacks` as sites, largest first, with the names made so
  // far: named stacks with equal keys are one site, a stack without a name
  // is a site of its own. True when every stack had its name.
  bool group(const std::vector<StackFigure>& stacks, std::vector<SiteFigure>* out);
  // exit, _exit: the naming thread makes no more names (async-signal-safe:
  // a store; the thread ends at its next step, or with the process).
  void stop() { stopped_.store(true, std::memory_order_release); }
  // An ASan build's fork waits for a name being made (shim/base/asan_build.h).
  void fork_prepare() { work_.lock(); }
  void fork_parent() { work_.unlock(); }

  static constexpr size_t kMaxNames = 4096;  // kept at most: past it they all go
  static constexpr int kIdleSeconds = 30;

 private:
  struct Named {
    std::string key, label, library;
  };
  static void* thread_main(void* self);
  void run();
  bool next(std::vector<uint32_t>* ids);
  void follow_loader();
  Named name_one(uint32_t stack_id);

  Recorder* r_;
  site::Rules rules_;
  // Shared with the naming thread, under mu_.
  pthread_mutex_t mu_ = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv_;
  std::vector<uint32_t> wanted_;
  std::unordered_map<uint32_t, Named> names_;
  bool running_ = false;
  std::atomic<bool> stopped_{false};
  // The naming thread's own.
  SpinLock work_;  // held while a name is made
  Symbolizer sym_;
  bool begun_ = false;
  uint64_t adds_ = 0, subs_ = 0;
};

}  // namespace gpumemrec
