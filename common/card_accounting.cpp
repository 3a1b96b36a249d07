#include "common/card_accounting.h"

#include <algorithm>
#include <map>

#include "common/format.h"

namespace gpumemrec::model {

namespace {

// The owning library of an allocation's stack, as a table key.
std::string library_key(const Bundle& b, uint64_t stack_id) {
  const Stack* s = stack_id ? b.find_stack(stack_id) : nullptr;
  if (!s) return "(no stack)";
  return s->library.empty() ? "(unknown)" : s->library;
}

void add_recorded(const Bundle& b, DeviceAccounting* a) {
  std::map<std::string, uint64_t> by_lib;
  for (const Allocation& x : b.allocations) {
    if (x.device_id != a->device || x.memory_type == "mapping") continue;
    a->recorded_live_bytes += x.size;
    by_lib[library_key(b, x.stack_id)] += x.size;
  }
  a->recorded_by_library.assign(by_lib.begin(), by_lib.end());
  std::stable_sort(a->recorded_by_library.begin(), a->recorded_by_library.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
}

void add_note(DeviceAccounting* a, const std::string& why) {
  if (why.empty() || a->note.find(why) != std::string::npos) return;
  a->note += (a->note.empty() ? "" : "; ") + why;
}

// NVML's figures: this process's share beyond what we recorded, the others.
void add_nvml(const NvmlProcesses& nvml, DeviceAccounting* a, std::optional<uint64_t>* nvml_sum) {
  if (!nvml.available) {
    add_note(a, nvml.note.empty() ? std::string("NVML did not answer") : nvml.note);
    return;
  }
  std::vector<GpuProcessUse> others;
  const GpuProcessUse* self = nullptr;
  uint64_t sum = 0;
  bool all_known = true;
  for (const GpuProcessUse& p : nvml.processes) {
    if (p.this_process) self = &p;
    else others.push_back(p);
    if (p.used_bytes) sum += *p.used_bytes;
    else all_known = false;
  }
  a->other_processes = std::move(others);
  if (!self) {
    add_note(a, "this process is not in NVML's list (inside a container NVML reports host pids, so one of the "
                "processes listed may be this one)");
    return;
  }
  if (!self->used_bytes) {
    add_note(a, "NVML does not say how much this process uses");
    return;
  }
  if (nvml.self_moving) {
    add_note(a, "this process allocated or freed while NVML was read, each time it was asked");
    return;
  }
  // NVML's figure for this process, taken back to the failure (card_accounting.h).
  int64_t change = nvml.self_change_bytes.value_or(0);
  const int64_t pool_change = nvml.self_pool_change_bytes.value_or(0);
  int64_t unrecorded = int64_t(*self->used_bytes) - change - int64_t(a->recorded_live_bytes);
  const bool pool_released = unrecorded < 0 && pool_change < 0;
  if (pool_released) {
    change += pool_change;
    unrecorded -= pool_change;
  }
  a->process_unrecorded_bytes = unrecorded;
  if (change != 0)
    add_note(a, "NVML was read after this process had " + std::string(change < 0 ? "freed " : "allocated ") +
                    format_bytes(uint64_t(change < 0 ? -change : change)) +
                    " since the failure; its figure is taken back to the failure by that amount" +
                    (pool_released ? " (its memory pools gave back what was freed into them)" : ""));
  if (pool_change < 0 && !pool_released)
    add_note(a, "freed into memory pools since the failure and still held by them: " +
                    format_bytes(uint64_t(-pool_change)));
  if (!all_known) add_note(a, "NVML does not say how much every process uses");
  else *nvml_sum = uint64_t(int64_t(sum) - change);
}

std::string signed_bytes(int64_t v) {
  return v < 0 ? "-" + format_bytes(uint64_t(-(v + 1)) + 1) : format_bytes(uint64_t(v));
}

std::string figure_line(const std::string& amount, const std::string& what) {
  std::string pad = amount.size() < 12 ? std::string(12 - amount.size(), ' ') : std::string();
  return "  " + pad + amount + "  " + what;
}

}  // namespace

DeviceAccounting account_device(const Bundle& b, int32_t device, std::optional<uint64_t> total,
                                std::optional<uint64_t> free, const NvmlProcesses& nvml) {
  DeviceAccounting a;
  a.device = device;
  a.total_bytes = total;
  a.free_bytes = free;
  add_recorded(b, &a);
  std::optional<uint64_t> nvml_sum;
  add_nvml(nvml, &a, &nvml_sum);
  if (!total) add_note(&a, "the device's total is unknown");
  if (!free) add_note(&a, "the device's free memory is unknown (asked only on the failing thread, of its device)");
  if (total && free && nvml_sum) a.unaccounted_bytes = int64_t(*total) - int64_t(*free) - int64_t(*nvml_sum);
  return a;
}

std::vector<std::string> accounting_lines(const DeviceAccounting& a) {
  std::vector<std::string> out;
  const std::string dev = "device " + std::to_string(a.device);
  out.push_back(a.total_bytes ? "Where " + dev + "'s " + format_bytes(*a.total_bytes) + " went:"
                              : "Where " + dev + "'s memory went (total unknown):");
  std::string libs;
  for (size_t i = 0; i < a.recorded_by_library.size() && i < 4; ++i)
    libs += (i ? ", " : "") + a.recorded_by_library[i].first + " " + format_bytes(a.recorded_by_library[i].second);
  if (a.recorded_by_library.size() > 4) libs += ", ...";
  out.push_back(figure_line(format_bytes(a.recorded_live_bytes),
                            "recorded live in this process" + (libs.empty() ? "" : " (" + libs + ")")));
  out.push_back(figure_line(a.process_unrecorded_bytes ? signed_bytes(*a.process_unrecorded_bytes) : "?",
                            "this process, not recorded (CUDA context, modules, local memory, graph pools; NVML)"));
  uint64_t others = 0;
  std::string names;
  if (a.other_processes)
    for (const GpuProcessUse& p : *a.other_processes) {
      others += p.used_bytes.value_or(0);
      if (names.size() < 120)
        names += std::string(names.empty() ? "" : ", ") + "pid " + std::to_string(p.pid) +
                 (p.name.empty() ? "" : " " + p.name) + " " + (p.used_bytes ? format_bytes(*p.used_bytes) : "?");
    }
  out.push_back(figure_line(a.other_processes ? format_bytes(others) : "?",
                            "other processes" + (names.empty() ? std::string() : " (" + names + ")")));
  out.push_back(figure_line(a.free_bytes ? format_bytes(*a.free_bytes) : "?", "free"));
  out.push_back(figure_line(a.unaccounted_bytes ? signed_bytes(*a.unaccounted_bytes) : "?",
                            "unaccounted (driver reservations, processes NVML does not show)"));
  if (!a.note.empty()) out.push_back("  (" + a.note + ")");
  return out;
}

}  // namespace gpumemrec::model
