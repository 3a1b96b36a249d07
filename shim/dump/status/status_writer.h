// Writes the status region's body (common/status_region.h) under its
// sequence lock, and keeps what the body carries across updates: which
// device is in which slot (the first kDevices that held memory, in the
// order they did), their PCI bus ids (asked of the driver once per device,
// through its unhooked cuDeviceGetPCIBusId / hipDeviceGetPCIBusId, for
// `top` to find the card in NVML), the curve of live bytes (the highest of
// each second, the last kCurvePoints seconds) and the framework's roles.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status_region.h"
#include "shim/dump/status/status_figures.h"
#include "shim/dump/status/status_names.h"

namespace gpumemrec {

struct FrameworkReport;

struct StatusUpdate {
  const StatusFigures* figures = nullptr;
  const std::vector<SiteFigure>* sites = nullptr;
  uint64_t sites_total = 0;
  uint32_t names = status::kNamesOff;
  uint64_t now_mono_ns = 0, now_real_ns = 0;
};

class RegionWriter {
 public:
  void write(status::Region* reg, const StatusUpdate& u);
  // The roles of the report handed over last (capture/framework_report.h),
  // read again only when it changed.
  void follow_roles(const std::shared_ptr<const FrameworkReport>& latest, uint64_t now_real_ns);

 private:
  int slot_of(int device);
  void sample(const StatusFigures& f, uint64_t now_mono_ns);
  void fill_body(status::Body* b, const StatusUpdate& u) const;

  int devices_[status::kDevices] = {};
  int ndevices_ = 0;
  char bus_[status::kDevices][status::kBusIdBytes] = {};
  uint64_t curve_[status::kDevices][status::kCurvePoints] = {};
  uint64_t second_max_[status::kDevices] = {};
  uint64_t second_end_ns_ = 0;
  uint64_t newest_ = status::kCurvePoints - 1;
  uint64_t samples_ = 0;
  uint64_t updates_ = 0;
  const FrameworkReport* roles_from_ = nullptr;
  status::RolesSlot roles_ = {};
};

}  // namespace gpumemrec
