#include "shim/dump/write/launcher_env.h"

#include <cstdlib>

namespace gpumemrec {

namespace {

// A decimal integer >= min, surrounding blanks allowed (Stormlog strips them).
bool parse_int(const char* s, int64_t min, int64_t* out) {
  if (!s) return false;
  while (*s == ' ' || *s == '\t') ++s;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (end == s) return false;
  while (*end == ' ' || *end == '\t' || *end == '\n') ++end;
  if (*end != '\0' || v < min) return false;
  *out = v;
  return true;
}

struct Group {
  const char* rank;
  const char* local_rank;  // may be null
  const char* world_size;
};

constexpr Group kGroups[] = {
    {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
    {"PMI_RANK", nullptr, "PMI_SIZE"},
};
constexpr const char* kJobIds[] = {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID"};

}  // namespace

LauncherIdentity launcher_identity(EnvLookup lookup, void* ctx) {
  LauncherIdentity id;
  for (const Group& g : kGroups) {
    const char* r = lookup(g.rank, ctx);
    const char* l = g.local_rank ? lookup(g.local_rank, ctx) : nullptr;
    const char* w = lookup(g.world_size, ctx);
    if (!r && !l && !w) continue;
    int64_t rank = 0, world = 1;
    // A group that does not give a valid rank < world size is not trusted;
    // the next launcher's variables may.
    if (!parse_int(r, 0, &rank) || !parse_int(w, 1, &world) || rank >= world) continue;
    id.rank = rank;
    id.world_size = world;
    if (!parse_int(l, 0, &id.local_rank) || id.local_rank >= world) id.local_rank = rank;
    break;
  }
  for (const char* name : kJobIds) {
    const char* v = lookup(name, ctx);
    if (!v) continue;
    while (*v == ' ') ++v;
    if (!*v) continue;
    id.has_job_id = true;
    id.job_id = v;
    break;
  }
  return id;
}

LauncherIdentity launcher_identity_from_environ() {
  return launcher_identity([](const char* name, void*) -> const char* { return std::getenv(name); }, nullptr);
}

}  // namespace gpumemrec
