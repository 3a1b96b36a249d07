// The process's place in a distributed job, from its launcher's environment
// (read once per dump). Resolution follows Stormlog's
// gpumemprof/telemetry.py (_RANK_ENV_GROUPS, _JOB_ID_ENV_KEYS,
// Silas-Asamoah/stormlog): the first group with any variable set wins —
// torchrun's RANK/LOCAL_RANK/WORLD_SIZE, Open MPI's
// OMPI_COMM_WORLD_RANK/_LOCAL_RANK/_SIZE, Slurm's SLURM_PROCID/SLURM_LOCALID/
// SLURM_NTASKS, then (ours) MPICH/Hydra's PMI_RANK/PMI_SIZE; a missing local
// rank is the rank; nothing set means rank 0 of 1. The job id is the first of
// TORCHELASTIC_RUN_ID, SLURM_JOB_ID (Stormlog's), PBS_JOBID, LSB_JOBID.
#pragma once
#include <cstdint>
#include <string>

namespace gpumemrec {

struct LauncherIdentity {
  int64_t rank = 0;
  int64_t local_rank = 0;
  int64_t world_size = 1;
  bool has_job_id = false;
  std::string job_id;
};

// `lookup(name, ctx)` returns the variable's value or null.
using EnvLookup = const char* (*)(const char* name, void* ctx);
LauncherIdentity launcher_identity(EnvLookup lookup, void* ctx);
// From the process environment.
LauncherIdentity launcher_identity_from_environ();

}  // namespace gpumemrec
