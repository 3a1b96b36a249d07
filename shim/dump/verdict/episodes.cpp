#include "shim/dump/verdict/episodes.h"

#include <algorithm>
#include <new>

namespace gpumemrec {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kRecovered: return "recovered";
    case Outcome::kFatal: return "fatal";
    default: return "unknown";
  }
}

uint64_t Episodes::on_failure(const FailureInfo& f, uint64_t now_ns, uint64_t live_on_device, uint64_t episode_ns,
                              PendingRequest* mine) {
  SpinGuard g(lock_);
  // An open episode whose time is up is decided before this failure counts.
  if (open_ && pending_ > 0 && now_ns > last_ns_ && now_ns - last_ns_ >= episode_ns && now_ns >= held_until_ns_)
    close(Outcome::kFatal, FatalCause::kNoRetry, 0);
  uint64_t opened = 0;
  if (!open_) {
    opened = open_ = next_id_++;
    // The opener dumps it (unwatch when it does not); with every watch slot
    // taken (more threads opening episodes at once than kWatched allows,
    // GPUMEMREC_EPISODE_MS=0) its verdict could be lost: no bundle for it.
    if (!watch_locked(opened)) opened = kUnwatched;
    first_ = f;
    first_ns_ = last_ns_ = now_ns;
    first_live_ = live_on_device;
    held_until_ns_ = 0;
    open_missed_ = false;
    pending_ = 0;
    recovery_ = Recovery{};
  } else {
    unreported_.fetch_add(1, std::memory_order_relaxed);
    if (now_ns > last_ns_) last_ns_ = now_ns;  // timestamps of other threads may be a little older
  }
  if (mine->episode != open_) {
    *mine = PendingRequest{open_, f.device, f.size, live_on_device};
    ++pending_;
  }
  return opened;
}

bool Episodes::on_success(PendingRequest* mine, uint32_t tid, HookId api, int device, uint64_t size,
                          uint64_t now_ns, uint64_t live_before) {
  SpinGuard g(lock_);
  if (mine->episode != open_) {  // an episode already decided: forget it
    mine->episode = 0;
    return false;
  }
  if (device != mine->device || size < mine->size) return false;  // not the retry
  // The figures are those of the first failing thread's retry (or of the
  // first retry seen, when that thread went away).
  if (tid == first_.tid || recovery_.tid == 0) {
    recovery_.after_ns = now_ns > first_ns_ ? now_ns - first_ns_ : 0;
    recovery_.freed_bytes = mine->live_at_failure > live_before ? mine->live_at_failure - live_before : 0;
    recovery_.retry_size = size;
    recovery_.retry_api = api;
    recovery_.tid = tid;
  }
  mine->episode = 0;
  if (--pending_ > 0) return false;
  close(Outcome::kRecovered, FatalCause::kNone, 0);
  return true;
}

void Episodes::returned(uint64_t id, uint64_t now_ns) {
  SpinGuard g(lock_);
  if (id == open_ && now_ns > last_ns_) last_ns_ = now_ns;
}

bool Episodes::expire(uint64_t now_ns, uint64_t episode_ns, bool force, FatalCause cause, int signal) {
  SpinGuard g(lock_);
  if (!open_) return false;
  if (!force && (now_ns <= last_ns_ || now_ns - last_ns_ < episode_ns || now_ns < held_until_ns_)) return false;
  close(Outcome::kFatal, cause, signal);
  return true;
}

uint64_t Episodes::open_on(int device) {
  SpinGuard g(lock_);
  return open_ && (device < 0 || first_.device == device) ? open_ : 0;
}

uint64_t Episodes::close_by_handler(int device, const char* handler, uint32_t tid, uint64_t now_ns,
                                    uint64_t live_now) {
  SpinGuard g(lock_);
  if (!open_ || first_.device != device || !held_until_ns_) return 0;
  const uint64_t id = open_;
  recovery_ = Recovery{};
  recovery_.after_ns = now_ns > first_ns_ ? now_ns - first_ns_ : 0;
  recovery_.freed_bytes = first_live_ > live_now ? first_live_ - live_now : 0;
  recovery_.tid = tid;
  size_t n = 0;
  for (; handler && handler[n] && n + 1 < Recovery::kHandlerBytes; ++n) recovery_.handler[n] = handler[n];
  recovery_.handler[n] = '\0';
  close(Outcome::kRecovered, FatalCause::kNone, 0);
  return id;
}

bool Episodes::close_fatal(uint64_t id, FatalCause cause) {
  SpinGuard g(lock_);
  if (!id || id != open_) return false;
  close(Outcome::kFatal, cause, 0);
  return true;
}

bool Episodes::hold(uint64_t id, uint64_t until_ns) {
  SpinGuard g(lock_);
  if (!id || id != open_) return false;
  if (until_ns > held_until_ns_) held_until_ns_ = until_ns;
  return true;
}

uint64_t Episodes::deadline_ns(uint64_t episode_ns) {
  SpinGuard g(lock_);
  if (!open_) return 0;
  const uint64_t window = last_ns_ + episode_ns;
  return held_until_ns_ > window ? held_until_ns_ : window;
}

bool Episodes::is_open(uint64_t id) {
  SpinGuard g(lock_);
  return id != 0 && id == open_;
}

bool Episodes::watch_locked(uint64_t id) {
  for (Verdict& w : watched_)
    if (w.episode == 0) {
      w = Verdict{};
      w.episode = id;
      return true;
    }
  return false;
}

void Episodes::unwatch(uint64_t id) { (void)release(id); }

Verdict Episodes::verdict(uint64_t id) {
  SpinGuard g(lock_);
  return verdict_locked(id);
}

Verdict Episodes::verdict_locked(uint64_t id) const {
  for (const Verdict& w : watched_)
    if (w.episode == id && id != 0) return w;
  if (closed_[id % kHistory].episode == id) return closed_[id % kHistory];
  Verdict v;
  v.episode = id;
  return v;  // open, or unwatched and older than the history (or forgotten after a fork): unknown
}

Verdict Episodes::release(uint64_t id) {
  SpinGuard g(lock_);
  const Verdict v = verdict_locked(id);
  for (Verdict& w : watched_)
    if (w.episode == id) w = Verdict{};
  return v;
}

void Episodes::close(Outcome o, FatalCause cause, int signal) {
  const Verdict v{open_, o, cause, signal, o == Outcome::kRecovered ? recovery_ : Recovery{}};
  closed_[open_ % kHistory] = v;
  for (Verdict& w : watched_)
    if (w.episode == open_) w = v;
  open_ = 0;
  pending_ = 0;
  held_until_ns_ = 0;
  if (o == Outcome::kRecovered && counting_) count_recovered();
  if (open_missed_ && o != Outcome::kRecovered) {
    ++missed_at_close_;
    unreported_.fetch_add(1, std::memory_order_relaxed);
  }
  open_missed_ = false;
}

bool Episodes::miss_unless_recovered(uint64_t id) {
  SpinGuard g(lock_);
  if (!counting_ || id == 0) return false;
  if (id == open_) {
    open_missed_ = true;
    return true;
  }
  return verdict_locked(id).outcome == Outcome::kRecovered;
}

uint64_t Episodes::missed_at_close() {
  SpinGuard g(lock_);
  return missed_at_close_;
}

void Episodes::count_recovered() {
  RecoveredFailure r;
  r.number = ++recovered_total_;
  r.time_ns = first_.time_ns;
  r.size = first_.size;
  r.device = first_.device;
  r.api = first_.api;
  r.tid = first_.tid;
  r.stack_id = first_.stack_id;
  r.after_ns = recovery_.after_ns;
  r.freed_bytes = recovery_.freed_bytes;
  recovered_[r.number % kListed] = r;
  unreported_.fetch_add(1, std::memory_order_relaxed);  // its failure got no bundle
}

RecoveredList Episodes::recovered() {
  RecoveredList out;
  out.listed.reserve(kListed);
  SpinGuard g(lock_);
  out.count = recovered_total_ - recovered_cleared_;
  out.up_to = recovered_total_;
  const uint64_t from = recovered_total_ - (out.count < kListed ? out.count : kListed) + 1;
  for (uint64_t n = from; n <= recovered_total_; ++n) out.listed.push_back(recovered_[n % kListed]);
  // Listed by the time of their failure, which is not always the order they
  // were decided in: a thread stamps its failure before it takes lock_, so a
  // failure stamped earlier can open the episode after one stamped later has
  // recovered (seen under TSan on a loaded machine). At most kListed entries,
  // sorted in place: no allocation on the dump path.
  std::sort(out.listed.begin(), out.listed.end(),
            [](const RecoveredFailure& a, const RecoveredFailure& b) {
              return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.number < b.number;
            });
  return out;
}

void Episodes::clear_recovered(uint64_t up_to) {
  SpinGuard g(lock_);
  if (up_to > recovered_cleared_ && up_to <= recovered_total_) recovered_cleared_ = up_to;
}

uint64_t Episodes::recovered_total() {
  SpinGuard g(lock_);
  return recovered_total_;
}

void Episodes::reset() {
  // A forked child: the parent's threads (and their pending requests) are
  // not here. Numbers keep counting; the lock may have been held at the fork.
  new (&lock_) SpinLock();
  open_ = 0;
  pending_ = 0;
  held_until_ns_ = 0;
  open_missed_ = false;
  missed_at_close_ = 0;
  for (Verdict& v : closed_) v = Verdict{};
  for (Verdict& v : watched_) v = Verdict{};
  recovered_cleared_ = recovered_total_;
  unreported_.store(0, std::memory_order_relaxed);
}

}  // namespace gpumemrec
