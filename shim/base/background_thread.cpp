#include "shim/base/background_thread.h"

#include <pthread.h>
#include <signal.h>

namespace gpumemrec {

bool start_background_thread(void* (*main)(void*), const char* name) {
  return start_background_thread(main, nullptr, name);
}

bool start_background_thread(void* (*main)(void*), void* arg, const char* name) {
  // The new thread inherits this mask: block everything around the create.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  const int rc = pthread_create(&t, &attr, main, arg);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) return false;
#ifdef __GLIBC__
  pthread_setname_np(t, name);
#endif
  return true;
}

}  // namespace gpumemrec
