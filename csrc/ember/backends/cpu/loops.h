// CPU inner loops over a TensorIterator. Each loop tests for the contiguous
// and the stride-0 (scalar) cases first so the compiler vectorizes them.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ember/backends/cpu/capability.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/tensor_iterator.h"

namespace ember::cpu {
// One copy per compiled CPU capability (capability.h): never merged across them.
inline namespace EMBER_CPU_NS {

// Note [Streaming stores]
// A large contiguous output (a row of >= kStreamBytes) is computed in chunks
// into an L1-resident buffer and written with non-temporal stores: the output
// never has to be read into the cache first (no read-for-ownership), which cuts
// a third of the memory traffic of `a + b` on arrays far larger than the cache.
constexpr int64_t kStreamBytes = int64_t(1) << 20;
constexpr int64_t kChunkBytes = 16384;

/// Copies `bytes` (a multiple of 64 when dst is 64-byte aligned) with non-temporal stores.
inline void stream_copy(void* dst, const void* src, int64_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 64 <= bytes; i += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_loadu_si512(s + i));
#elif defined(__AVX__)
  for (; i + 32 <= bytes; i += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
#endif
  if (i < bytes) std::memcpy(d + i, s + i, size_t(bytes - i));
}

inline bool streamable(const void* out, int64_t bytes) {
  return bytes >= kStreamBytes && (reinterpret_cast<uintptr_t>(out) & 63) == 0;
}

/// Runs `body(dst, begin, end)` over [0, n), where body writes element i at
/// dst[i - begin]: either directly into `out` or, for large aligned outputs,
/// chunk by chunk into a buffer that is streamed to `out`.
template <typename Out, typename Body>
inline void contiguous_out(Out* out, int64_t n, Body body) {
  if (!streamable(out, n * int64_t(sizeof(Out)))) {
    body(out, 0, n);
    return;
  }
  constexpr int64_t chunk = kChunkBytes / int64_t(sizeof(Out));
  alignas(64) Out buf[chunk];
  int64_t i = 0;
  for (; i + chunk <= n; i += chunk) {
    body(buf, i, i + chunk);
    stream_copy(out + i, buf, kChunkBytes);
  }
  if (i < n) body(out + i, i, n);
  _mm_sfence();
}

/// out[i] = f(a[i]) computed in opmath_t<In>.
template <typename Out, typename In, typename F>
void unary_loop(const TensorIterator& it, F f) {
  using M = opmath_t<In>;
  it.for_each([f](char** d, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      const In* __restrict a = reinterpret_cast<const In*>(d[1]);
      contiguous_out(reinterpret_cast<Out*>(d[0]), n, [&](Out* __restrict o, int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i - b] = Out(f(M(a[i])));
      });
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(d[0] + i * s[0]) =
            Out(f(M(*reinterpret_cast<const In*>(d[1] + i * s[1]))));
    }
  });
}

/// out[i] = f(a[i], b[i]) computed in opmath_t<In>.
template <typename Out, typename In, typename F>
void binary_loop(const TensorIterator& it, F f) {
  using M = opmath_t<In>;
  it.for_each([f](char** d, const int64_t* s, int64_t n) {
    Out* __restrict o = reinterpret_cast<Out*>(d[0]);
    const In* __restrict a = reinterpret_cast<const In*>(d[1]);
    const In* __restrict b = reinterpret_cast<const In*>(d[2]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == sizeof(In)) {
      contiguous_out(o, n, [&](Out* __restrict w, int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) w[i - lo] = Out(f(M(a[i]), M(b[i])));
      });
    } else if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == 0) {
      const M bv = M(*b);
      contiguous_out(o, n, [&](Out* __restrict w, int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) w[i - lo] = Out(f(M(a[i]), bv));
      });
    } else if (s[0] == sizeof(Out) && s[1] == 0 && s[2] == sizeof(In)) {
      const M av = M(*a);
      contiguous_out(o, n, [&](Out* __restrict w, int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) w[i - lo] = Out(f(av, M(b[i])));
      });
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(d[0] + i * s[0]) =
            Out(f(M(*reinterpret_cast<const In*>(d[1] + i * s[1])),
                  M(*reinterpret_cast<const In*>(d[2] + i * s[2]))));
    }
  });
}

}  // namespace EMBER_CPU_NS
}  // namespace ember::cpu
