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
// An elementwise op whose operands together far exceed the last-level cache computes its
// contiguous output in chunks into an L1-resident buffer and writes them with
// non-temporal stores: the output never has to be read into the cache first (no
// read-for-ownership), which cuts a third of the memory traffic of `a + b` on arrays far
// larger than the cache (16M floats, 2 threads: 7.6 -> 6.4 ms).
// Below that size streaming loses: the non-temporal stores push the result out to DRAM,
// where the next op (or the next call of a loop) has to fetch it again. With a 32 MiB L3,
// `a + b` on 4M floats (48 MiB touched) ran 1.82 ms plain against 2.36 ms streamed. The
// threshold is the bytes the op touches (output plus each input read), not the output
// alone, and one decision covers the whole op rather than each thread's share.
// An output that is one of the inputs (`x.mul_(2)`, `out=` onto an input) is never
// streamed: its lines are already in the cache from the read, there is no
// read-for-ownership to save, and the non-temporal store would only evict them
// (`x.mul_(1)` on 1M floats: 402 us streamed, 71 us plain).
constexpr int64_t kStreamTouchedBytes = int64_t(64) << 20;
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

/// Whether `it`'s (first) output should be streamed (Note [Streaming stores]): the op
/// touches kStreamTouchedBytes or more and the output is not also an input.
inline bool stream_output(const TensorIterator& it) {
  const int64_t out_bytes = it.numel() * element_size(it.dtype(0));
  if (out_bytes * it.ntensors() < kStreamTouchedBytes) return false;  // cheap exit first
  int64_t touched = out_bytes;
  for (int i = it.noutputs(); i < it.ntensors(); ++i) {
    if (it.data(i) == it.data(0)) return false;
    bool broadcast = false;
    for (int64_t st : it.strides(i)) broadcast = broadcast || st == 0;
    if (!broadcast) touched += it.numel() * element_size(it.dtype(i));
  }
  return touched >= kStreamTouchedBytes;
}

/// Runs `body(dst, begin, end)` over [0, n), where body writes element i at
/// dst[i - begin]: directly into `out`, or, when `stream` (stream_output) and `out` is
/// 64-byte aligned, chunk by chunk into a buffer that is streamed to `out`.
template <typename Out, typename Body>
inline void contiguous_out(bool stream, Out* out, int64_t n, Body body) {
  if (!stream || n * int64_t(sizeof(Out)) < kChunkBytes ||
      (reinterpret_cast<uintptr_t>(out) & 63) != 0) {
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
  const bool stream = stream_output(it);
  it.for_each([f, stream](char** d, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      const In* __restrict a = reinterpret_cast<const In*>(d[1]);
      contiguous_out(stream, reinterpret_cast<Out*>(d[0]), n,
                     [&](Out* __restrict o, int64_t b, int64_t e) {
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
  const bool stream = stream_output(it);
  it.for_each([f, stream](char** d, const int64_t* s, int64_t n) {
    Out* __restrict o = reinterpret_cast<Out*>(d[0]);
    const In* __restrict a = reinterpret_cast<const In*>(d[1]);
    const In* __restrict b = reinterpret_cast<const In*>(d[2]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == sizeof(In)) {
      contiguous_out(stream, o, n, [&](Out* __restrict w, int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) w[i - lo] = Out(f(M(a[i]), M(b[i])));
      });
    } else if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == 0) {
      const M bv = M(*b);
      contiguous_out(stream, o, n, [&](Out* __restrict w, int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) w[i - lo] = Out(f(M(a[i]), bv));
      });
    } else if (s[0] == sizeof(Out) && s[1] == 0 && s[2] == sizeof(In)) {
      const M av = M(*a);
      contiguous_out(stream, o, n, [&](Out* __restrict w, int64_t lo, int64_t hi) {
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
