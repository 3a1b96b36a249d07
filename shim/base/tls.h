// Thread-local storage for the hot path: the initial-exec model makes each
// access one instruction (no __tls_get_addr call). Fine for a library loaded
// at start-up (LD_PRELOAD); the variables are plain data (no constructor).
#pragma once

#define GM_TLS __thread __attribute__((tls_model("initial-exec")))
