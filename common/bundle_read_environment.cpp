// environment.json (optional: older bundles may lack it).
#include "common/bundle_read_files.h"


#include "common/bundle_read_json.h"
#include "common/bundle_schema.h"

namespace gpumemrec::model::read {

// environment.json ------------------------------------------------------------

bool read_environment(const std::string& path, Environment* e, ReadError* err) {
  std::vector<char> buf;
  rapidjson::Document d;
  if (!parse_dom(path, &buf, &d, err) || !expect_object(path, d, err)) return false;
  Fields f{path, "", err};
  if (!f.i64(d, key::kPid, &e->pid) || !f.i64(d, key::kPpid, &e->ppid) || !f.str(d, key::kCwd, &e->cwd) ||
      !f.str(d, key::kHostname, &e->hostname) || !f.i64(d, key::kDriverVersion, &e->driver_version) ||
      !f.i64(d, key::kRuntimeVersion, &e->runtime_version))
    return false;
  auto cl = d.FindMember(key::kCmdline);
  if (cl != d.MemberEnd() && cl->value.IsArray())
    for (auto& v : cl->value.GetArray())
      if (v.IsString()) e->cmdline.emplace_back(v.GetString(), v.GetStringLength());
  auto dv = d.FindMember(key::kDevices);
  if (dv != d.MemberEnd() && dv->value.IsArray()) {
    for (auto& v : dv->value.GetArray()) {
      if (!v.IsObject()) continue;
      Fields fd{path, "devices: ", err};
      DeviceInfo di;
      if (!fd.device(v, key::kDeviceId, &di.device_id) || !fd.str(v, key::kName, &di.name) ||
          !fd.u64(v, key::kTotalBytes, &di.total_bytes))
        return false;
      e->devices.push_back(std::move(di));
    }
  }
  auto env = d.FindMember(key::kEnv);
  if (env != d.MemberEnd() && env->value.IsObject())
    for (auto& kv : env->value.GetObject())
      e->env.emplace_back(std::string(kv.name.GetString(), kv.name.GetStringLength()), value_text(kv.value));
  e->present = true;
  return true;
}


}  // namespace gpumemrec::model::read
