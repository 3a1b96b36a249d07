/* The glibc symbol-version floor (docs/compatibility.md, "glibc 2.28 and
   later"): what every shipped ELF file links in so that it needs no glibc
   symbol version newer than GLIBC_2.28, although it is built on a newer glibc
   (Debian 12: 2.36).

   Each function here has the name of a glibc function whose default version
   is newer than 2.28 and is hidden: the linker binds every reference in the
   same link to it (our objects and the static libstdc++/libgcc archive
   members alike, which a forced-include header could not reach), and it
   forwards to the oldest version glibc still exports (a `.symver` reference,
   e.g. pthread_create@GLIBC_2.2.5), or, for functions glibc 2.28 does not
   have at all, uses the newer one when the running glibc has it and does the
   job itself otherwise (runtime.c).

   On glibc 2.28-2.33 the pthread and dl functions live in libpthread.so.0
   and libdl.so.2; ld.so matches a versioned reference by symbol name and
   version name in the whole lookup scope, not by the file the version need
   names, so each shipped file keeps DT_NEEDED entries for both
   (glibc_floor.cmake). glibc 2.34 kept every old version as a compatibility
   symbol, so the same file runs there unchanged (sourceware glibc commit
   035c012e32c11e84d64905efaf55e74f704d3668 and the 2.34 NEWS, "libpthread
   ... merged into libc"). */
#ifndef GPUMEMREC_GLIBC_FLOOR_H
#define GPUMEMREC_GLIBC_FLOOR_H

#define FLOOR_HIDDEN __attribute__((visibility("hidden")))

/* FLOOR_FORWARD(ret, name, "GLIBC_x.y", (params), (args)): a hidden `name`
   that calls name@GLIBC_x.y. */
#define FLOOR_FORWARD(ret, name, version, params, args)               \
  ret gmr_floor_old_##name params;                                    \
  __asm__(".symver gmr_floor_old_" #name ", " #name "@" version);    \
  FLOOR_HIDDEN ret name params { return gmr_floor_old_##name args; }

/* The running glibc's name@version, or NULL; *cache keeps the answer
   (runtime.c). */
FLOOR_HIDDEN void* gmr_floor_newer(void** cache, const char* name, const char* version);

#endif
