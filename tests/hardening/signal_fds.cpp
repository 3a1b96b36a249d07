// signal_fds: a daemon-style program that closes every descriptor above 2
// after start-up, then opens files of its own (which get the lowest free
// numbers, those any library may have cached) and asks for signal dumps.
//
//   signal_fds [rounds=2] [signal=SIGUSR2]
//
// Writes "own file <i>\n" into 16 files own<i>.txt in the working directory,
// raises the signal `rounds` times (waiting up to 120 s each for a new bundle
// in $GPUMEMREC_DIR), then reads the files back.
// Output: FDS first=<lowest fd of the own files>, BUNDLES n=<new bundles>,
// OWNFILES intact=<files unchanged>/16, DONE.
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

int bundles_in(const char* dir) {
  if (!dir) return 0;
  DIR* d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  while (struct dirent* e = readdir(d))
    if (std::strncmp(e->d_name, "oom_dump_", 9) == 0) ++n;
  closedir(d);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const int rounds = argc > 1 ? atoi(argv[1]) : 2;
  const int sig = argc > 2 ? atoi(argv[2]) : SIGUSR2;
  void* p[3];
  for (auto& q : p) cudaMalloc(&q, 1 << 20);
  // Daemon-style: close everything the process inherited or opened so far.
  for (int fd = 3; fd < 4096; ++fd) close(fd);
  constexpr int kFiles = 16;
  int fds[kFiles];
  char expect[kFiles][32];
  for (int i = 0; i < kFiles; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "own%d.txt", i);
    fds[i] = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
    std::snprintf(expect[i], sizeof expect[i], "own file %d\n", i);
    if (fds[i] < 0 || write(fds[i], expect[i], std::strlen(expect[i])) < 0) {
      std::printf("ERROR open/write own%d.txt\n", i);
      return 1;
    }
  }
  std::printf("FDS first=%d\n", fds[0]);
  const char* dir = getenv("GPUMEMREC_DIR");
  const int before = bundles_in(dir);
  for (int k = 0; k < rounds; ++k) {
    kill(getpid(), sig);
    for (int i = 0; i < 12000 && bundles_in(dir) <= before + k; ++i) usleep(10000);  // up to 120 s (loaded machine)
  }
  std::printf("BUNDLES n=%d\n", bundles_in(dir) - before);
  int intact = 0;
  for (int i = 0; i < kFiles; ++i) {
    char buf[64] = "";
    const ssize_t n = pread(fds[i], buf, sizeof buf - 1, 0);
    if (n == ssize_t(std::strlen(expect[i])) && std::memcmp(buf, expect[i], size_t(n)) == 0 &&
        lseek(fds[i], 0, SEEK_CUR) == n)
      ++intact;
    close(fds[i]);
  }
  std::printf("OWNFILES intact=%d/%d\n", intact, kFiles);
  std::printf("DONE\n");
  return 0;
}
