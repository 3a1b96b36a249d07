/* The glibc floor (floor.h) for programs: __libc_start_main.

   glibc 2.34 moved running the program's constructors from the program into
   libc (sourceware glibc commit 035c012e32c11e84d64905efaf55e74f704d3668,
   "elf: Remove __libc_csu_init and __libc_csu_fini"): a program linked
   there (its crt1.o) calls __libc_start_main@GLIBC_2.34 with no `init`
   function. The old version, the only one glibc 2.28 has, runs `init` when
   one is given and nothing otherwise, and glibc 2.34 and later keep it for
   old programs, running `init` in place of the program's DT_INIT and
   DT_INIT_ARRAY. So: call the old version with an `init` that does what the
   old libc_nonshared.a's __libc_csu_init did for a dynamically linked
   program (glibc csu/elf-init.c up to 2.33): _init, then .init_array in
   order (.preinit_array is ld.so's job in a dynamic program). */
#include <stddef.h>

#include "common/glibc_floor/floor.h"

typedef void (*floor_init_fn)(int, char**, char**);
typedef int (*floor_main_fn)(int, char**, char**);

extern floor_init_fn __init_array_start[] FLOOR_HIDDEN;  /* from the linker */
extern floor_init_fn __init_array_end[] FLOOR_HIDDEN;
extern void _init(void);                                  /* crti.o */

static void floor_csu_init(int argc, char** argv, char** envp) {
  _init();
  size_t n = (size_t)(__init_array_end - __init_array_start);
  for (size_t i = 0; i < n; i++) __init_array_start[i](argc, argv, envp);
}

int gmr_floor_old_libc_start_main(floor_main_fn main, int argc, char** argv, floor_init_fn init, void (*fini)(void),
                                  void (*rtld_fini)(void), void* stack_end);
__asm__(".symver gmr_floor_old_libc_start_main, __libc_start_main@GLIBC_2.2.5");

FLOOR_HIDDEN int __libc_start_main(floor_main_fn main, int argc, char** argv, floor_init_fn init, void (*fini)(void),
                                   void (*rtld_fini)(void), void* stack_end) {
  return gmr_floor_old_libc_start_main(main, argc, argv, init ? init : floor_csu_init, fini, rtld_fini, stack_end);
}
