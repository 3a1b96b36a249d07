// libgpumemrec.so's ELF header and version needs against this system
// (preload_check.h). Reads the file header, the section headers and two
// sections (.gnu.version_r and its string table) with pread.
#include "tools/preload_check.h"

#include <elf.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace gpumemrec::cli {
namespace {

struct File {
  int fd;
  explicit File(const std::string& path) : fd(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd >= 0) close(fd);
  }
  bool read(uint64_t off, void* buf, size_t n) const { return pread(fd, buf, n, off_t(off)) == ssize_t(n); }
};

std::vector<int> numbers(const std::string& dotted) {
  std::vector<int> v;
  for (const char* p = dotted.c_str();; ++p) {
    char* end;
    v.push_back(int(std::strtol(p, &end, 10)));
    if (end == p || *end != '.') return v;
    p = end;
  }
}

// The GLIBC_x.y names in the version needs section; false when unreadable.
bool glibc_needs(const File& f, const Elf64_Ehdr& eh, std::vector<std::string>* out) {
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || !f.read(eh.e_shoff, sh.data(), sh.size() * sizeof(Elf64_Shdr)))
    return false;
  for (const auto& s : sh) {
    if (s.sh_type != SHT_GNU_verneed || s.sh_link >= sh.size() || s.sh_size > (16u << 20)) continue;
    const Elf64_Shdr& strs = sh[s.sh_link];
    if (strs.sh_size > (16u << 20)) return false;
    std::vector<char> sec(s.sh_size), str(strs.sh_size + 1, '\0');
    if (!f.read(s.sh_offset, sec.data(), sec.size()) || !f.read(strs.sh_offset, str.data(), strs.sh_size)) return false;
    for (size_t off = 0, n = 0; n < s.sh_info && off + sizeof(Elf64_Verneed) <= sec.size(); ++n) {
      Elf64_Verneed vn;
      std::memcpy(&vn, sec.data() + off, sizeof vn);
      for (size_t a = off + vn.vn_aux, k = 0; k < vn.vn_cnt && a + sizeof(Elf64_Vernaux) <= sec.size(); ++k) {
        Elf64_Vernaux vna;
        std::memcpy(&vna, sec.data() + a, sizeof vna);
        if (vna.vna_name < strs.sh_size && std::strncmp(&str[vna.vna_name], "GLIBC_2.", 8) == 0)
          out->push_back(&str[vna.vna_name]);
        if (!vna.vna_next) break;
        a += vna.vna_next;
      }
      if (!vn.vn_next) break;
      off += vn.vn_next;
    }
  }
  return true;
}

}  // namespace

bool glibc_version_newer(const std::string& need, const std::string& have) {
  return numbers(need) > numbers(have);
}

std::string preload_refusal(const std::string& library) {
  File f(library);
  Elf64_Ehdr eh;
  if (f.fd < 0 || !f.read(0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return "cannot read it as an ELF file";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
    return "it is an ELF file for machine " + std::to_string(eh.e_machine) + " (class " +
           std::to_string(eh.e_ident[EI_CLASS]) + "), this command runs on x86-64 (machine " +
           std::to_string(EM_X86_64) + ")";
  std::vector<std::string> needs;
  if (!glibc_needs(f, eh, &needs)) return "cannot read its section headers";
  const std::string have = gnu_get_libc_version();
  for (const auto& n : needs)
    if (glibc_version_newer(n.substr(6), have))
      return "it needs " + n + ", this system has glibc " + have;
  return "";
}

}  // namespace gpumemrec::cli
