// Thread-local state on the hot path of every op.
#pragma once

// Note [Initial-exec thread-locals]
// libember_core is a shared library, so a plain thread_local is reached through
// __tls_get_addr (the general-dynamic model): a call and a lookup on every read of the
// grad-mode flag or the allocator's thread cache, 4-5% of a small op. The initial-exec model
// reads it at a fixed offset from the thread pointer instead. A library loaded by dlopen may
// use that model only for the few bytes glibc reserves for it (the static TLS surplus), so it
// is kept to flags and pointers; larger thread-local objects stay general-dynamic.
#if defined(__GNUC__) && !defined(_WIN32)
#define EMBER_TLS_FAST __attribute__((tls_model("initial-exec")))
#else
#define EMBER_TLS_FAST
#endif
