/* The glibc floor (floor.h): functions whose default version moved past
   GLIBC_2.28 while the old version stayed, called through the old one.
   The versions are those glibc 2.36 exports (objdump -T libc.so.6 libm.so.6
   on Debian 12): the 2.34 versions are the libpthread/libdl merge, 2.32
   pthread_sigmask's move, 2.29 the new libm exp/log/pow without the errno
   wrappers (glibc 2.29 NEWS). No glibc header is included: their
   declarations would give these names default visibility. */
#include "common/glibc_floor/floor.h"

typedef unsigned long floor_thread;

FLOOR_FORWARD(int, pthread_create, "GLIBC_2.2.5", (void* t, const void* a, void* (*f)(void*), void* arg), (t, a, f, arg))
FLOOR_FORWARD(int, pthread_detach, "GLIBC_2.2.5", (floor_thread t), (t))
FLOOR_FORWARD(int, pthread_join, "GLIBC_2.2.5", (floor_thread t, void** r), (t, r))
FLOOR_FORWARD(int, pthread_once, "GLIBC_2.2.5", (int* o, void (*f)(void)), (o, f))
FLOOR_FORWARD(int, __pthread_key_create, "GLIBC_2.2.5", (unsigned* k, void (*d)(void*)), (k, d))
FLOOR_FORWARD(int, pthread_key_create, "GLIBC_2.2.5", (unsigned* k, void (*d)(void*)), (k, d))
FLOOR_FORWARD(int, pthread_getcpuclockid, "GLIBC_2.2.5", (floor_thread t, int* c), (t, c))
FLOOR_FORWARD(int, pthread_setname_np, "GLIBC_2.12", (floor_thread t, const char* n), (t, n))
FLOOR_FORWARD(int, pthread_sigmask, "GLIBC_2.2.5", (int how, const void* s, void* o), (how, s, o))
FLOOR_FORWARD(int, pthread_mutex_trylock, "GLIBC_2.2.5", (void* m), (m))
FLOOR_FORWARD(int, pthread_mutexattr_init, "GLIBC_2.2.5", (void* a), (a))
FLOOR_FORWARD(int, pthread_mutexattr_destroy, "GLIBC_2.2.5", (void* a), (a))
FLOOR_FORWARD(int, pthread_mutexattr_settype, "GLIBC_2.2.5", (void* a, int t), (a, t))
FLOOR_FORWARD(int, pthread_condattr_setclock, "GLIBC_2.3.3", (void* a, int c), (a, c))
FLOOR_FORWARD(int, pthread_mutexattr_setpshared, "GLIBC_2.2.5", (void* a, int p), (a, p))
FLOOR_FORWARD(int, pthread_mutexattr_setrobust, "GLIBC_2.12", (void* a, int r), (a, r))
FLOOR_FORWARD(int, pthread_mutex_consistent, "GLIBC_2.12", (void* m), (m))
FLOOR_FORWARD(void*, pthread_getspecific, "GLIBC_2.2.5", (unsigned k), (k))
FLOOR_FORWARD(int, pthread_setspecific, "GLIBC_2.2.5", (unsigned k, const void* v), (k, v))
FLOOR_FORWARD(int, pthread_key_delete, "GLIBC_2.2.5", (unsigned k), (k))
FLOOR_FORWARD(int, sem_init, "GLIBC_2.2.5", (void* s, int p, unsigned v), (s, p, v))
FLOOR_FORWARD(int, sem_post, "GLIBC_2.2.5", (void* s), (s))
FLOOR_FORWARD(int, sem_wait, "GLIBC_2.2.5", (void* s), (s))
FLOOR_FORWARD(int, sem_trywait, "GLIBC_2.2.5", (void* s), (s))
FLOOR_FORWARD(int, sem_destroy, "GLIBC_2.2.5", (void* s), (s))
FLOOR_FORWARD(int, sem_timedwait, "GLIBC_2.2.5", (void* s, const void* t), (s, t))
FLOOR_FORWARD(void*, dlopen, "GLIBC_2.2.5", (const char* f, int m), (f, m))
FLOOR_FORWARD(void*, dlvsym, "GLIBC_2.2.5", (void* h, const char* s, const char* v), (h, s, v))
FLOOR_FORWARD(int, dladdr, "GLIBC_2.2.5", (const void* a, void* i), (a, i))
FLOOR_FORWARD(char*, dlerror, "GLIBC_2.2.5", (void), ())
FLOOR_FORWARD(double, exp, "GLIBC_2.2.5", (double x), (x))
FLOOR_FORWARD(double, log, "GLIBC_2.2.5", (double x), (x))
FLOOR_FORWARD(double, pow, "GLIBC_2.2.5", (double x, double y), (x, y))
