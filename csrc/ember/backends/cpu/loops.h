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

// Note [Kernel compile time]
// The kernel files compiled once per CPU capability are most of a cold build (elementwise
// alone is two minutes per copy on this 2-core machine), and GCC compiles an inlined loop
// once per call site: every extra call of a loop body in a template multiplies by the ops
// and dtypes it is instantiated for. So a loop body has one call site (contiguous_out below:
// the elementwise AVX2 copy went from 137 to 109 CPU-s, activations from 41 to 34), and a
// helper that runs once per work item is kept out of line (reduce_engine.h's `accumulate`:
// reductions 52 -> 47 CPU-s). tools/cold_build.sh times a whole cold build.

/// Runs `body(dst, begin, end)` over [0, n), where body writes element i at
/// dst[i - begin]: directly into `out`, or, when `stream` (stream_output) and `out` is
/// 64-byte aligned, chunk by chunk into a buffer that is streamed to `out`.
/// `body` has one call site, so the compiler inlines and vectorizes its loop once per
/// instance (with a call site per path, a binary op's three contiguous cases were each
/// compiled three times: Note [Kernel compile time]).
template <typename Out, typename Body>
inline void contiguous_out(bool stream, Out* out, int64_t n, Body body) {
  constexpr int64_t chunk = kChunkBytes / int64_t(sizeof(Out));
  stream = stream && n >= chunk && (reinterpret_cast<uintptr_t>(out) & 63) == 0;
  alignas(64) Out buf[chunk];
  const int64_t step = stream ? chunk : n;
  for (int64_t i = 0; i < n; i += step) {
    const int64_t e = n - i < step ? n : i + step;
    const bool via_buf = stream && e - i == chunk;  // a whole chunk is streamed
    body(via_buf ? buf : out + i, i, e);
    if (via_buf) stream_copy(out + i, buf, kChunkBytes);
  }
  if (stream) _mm_sfence();
}

// Note [Half loops]
// With F16C (the AVX2 and AVX512 copies), float16 elements are converted eight at a time by
// vcvtph2ps / vcvtps2ph. GCC does not vectorize Half's portable conversions (core/half.h:
// bit manipulation with branches for subnormals and infinities), nor the _Float16 casts,
// so a float16 loop ran one element at a time: `x * 2` on 1M halfs took 1.77 ms against
// PyTorch's 0.19. A contiguous loop whose input or output is Half instead converts a chunk
// of kHalfChunk elements into a float buffer, runs the op's loop over floats (which
// vectorizes), and converts the results back: the same values, as both conversions round to
// nearest even and only NaN payloads may differ (the hardware keeps them, as NumPy does). Each
// op's float16 loop is then a float loop too, which is also smaller to compile.
// The chunk is 128 elements: in a standalone F16C loop (`x * 2` over 1M halfs, one thread,
// three runs) chunks of 32-128 took 130-178 us and 256 took 373-428 us, whatever the output's
// alignment, with the time in the buffer stores; 256 had made ember's float16 add and
// `x * 2.0` 1.9-2.4x PyTorch's time. In the AVX-512 copy the float loops read the buffers 64
// bytes at a time, so the conversions write (and read) 64-byte vectors too: a load that spans two
// 32-byte stores is not forwarded from the store buffer. In a standalone copy of the `x * 2`
// loop that took 114.5 -> 105.6 us (a fused loop with no buffers, which ember's scalar functors
// cannot express, 61).
#if defined(__F16C__)
template <typename T>
constexpr bool kHalfVec = std::is_same<T, Half>::value;
#else
template <typename T>
constexpr bool kHalfVec = false;
#endif
constexpr int64_t kHalfChunk = 128;

/// d[0, n) = s[0, n) as floats, exactly.
inline void half_to_float(const Half* s, float* d, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  // Sixteen at a time where the float loop reads 64-byte vectors (Note [Half loops]); the
  // zero-masked forms with a full mask, as GCC 12's unmasked ones read an "undefined" vector
  // that -Wmaybe-uninitialized reports.
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(
        d + i,
        _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
#endif
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  for (; i < n; ++i) d[i] = _cvtsh_ss(s[i].x);
#endif
  for (; i < n; ++i) d[i] = float(s[i]);
}

/// d[0, n) = s[0, n) rounded to float16 (nearest even).
inline void float_to_half(const float* s, Half* d, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(d + i),
        _mm512_maskz_cvtps_ph(0xffff, _mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#endif
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) d[i].x = _cvtss_sh(s[i], _MM_FROUND_TO_NEAREST_INT);
#endif
  for (; i < n; ++i) d[i] = Half(s[i]);
}

/// Whether a contiguous loop over In -> Out goes through float chunks (Note [Half loops]).
template <typename Out, typename In>
constexpr bool kHalfChunked = kHalfVec<In> || kHalfVec<Out>;

/// A contiguous input of a chunked loop: element j of the current chunk as opmath_t<In>, from
/// a float copy of the chunk for a Half input, else read in place.
template <typename In>
struct ChunkIn {
  using M = opmath_t<In>;
  alignas(64) float buf[kHalfVec<In> ? kHalfChunk : 1];
  const In* p = nullptr;
  void load(const In* a, int64_t c, int64_t m) {
    if constexpr (kHalfVec<In>)
      half_to_float(a + c, buf, m);
    else
      p = a + c;
  }
  M operator[](int64_t j) const {
    if constexpr (kHalfVec<In>)
      return M(buf[j]);
    else
      return M(p[j]);
  }
};

/// w[0, hi - lo) = Out(g(j)) over the chunks of [lo, hi): `load(c, m)` readies the inputs of
/// chunk [c, c + m), then g(j) computes its element c + j in opmath_t. A Half output is
/// computed into a float buffer and converted per chunk.
template <typename Out, typename Load, typename G>
inline void chunked_out(Out* __restrict w, int64_t lo, int64_t hi, Load load, G g) {
  alignas(64) float ob[kHalfVec<Out> ? kHalfChunk : 1];
  for (int64_t c = lo; c < hi; c += kHalfChunk) {
    const int64_t m = hi - c < kHalfChunk ? hi - c : kHalfChunk;
    load(c, m);
    if constexpr (kHalfVec<Out>) {
      for (int64_t j = 0; j < m; ++j) ob[j] = float(g(j));
      float_to_half(ob, w + (c - lo), m);
    } else {
      Out* __restrict o = w + (c - lo);
      for (int64_t j = 0; j < m; ++j) o[j] = Out(g(j));
    }
  }
}

/// w[0, hi - lo) = Out(f(a[i])) over [lo, hi) of a contiguous input, in opmath_t<In>.
template <typename Out, typename In, typename F>
inline void unary_span(Out* __restrict w, const In* __restrict a, int64_t lo, int64_t hi, F f) {
  using M = opmath_t<In>;
  if constexpr (kHalfChunked<Out, In>) {
    ChunkIn<In> ia;
    chunked_out(
        w, lo, hi, [&](int64_t c, int64_t m) { ia.load(a, c, m); },
        [&](int64_t j) { return f(ia[j]); });
  } else {
    for (int64_t i = lo; i < hi; ++i) w[i - lo] = Out(f(M(a[i])));
  }
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
                     [&](Out* __restrict o, int64_t b, int64_t e) { unary_span(o, a, b, e, f); });
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(d[0] + i * s[0]) =
            Out(f(M(*reinterpret_cast<const In*>(d[1] + i * s[1]))));
    }
  });
}

/// w[0, hi - lo) = Out(f(a, b)) over [lo, hi), for one contiguous case of binary_loop: each
/// operand a span (AS, BS) or a single value read once.
template <bool AS, bool BS, typename Out, typename In, typename F>
inline void binary_span(Out* __restrict w, const In* __restrict a, const In* __restrict b,
                        int64_t lo, int64_t hi, F f) {
  using M = opmath_t<In>;
  const M av = AS ? M(0) : M(*a), bv = BS ? M(0) : M(*b);
  if constexpr (kHalfChunked<Out, In>) {
    ChunkIn<In> ia, ib;
    chunked_out(
        w, lo, hi,
        [&](int64_t c, int64_t m) {
          if constexpr (AS) ia.load(a, c, m);
          if constexpr (BS) ib.load(b, c, m);
        },
        [&](int64_t j) { return f(AS ? ia[j] : av, BS ? ib[j] : bv); });
  } else {
    for (int64_t i = lo; i < hi; ++i) w[i - lo] = Out(f(AS ? M(a[i]) : av, BS ? M(b[i]) : bv));
  }
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
        binary_span<true, true>(w, a, b, lo, hi, f);
      });
    } else if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == 0) {
      contiguous_out(stream, o, n, [&](Out* __restrict w, int64_t lo, int64_t hi) {
        binary_span<true, false>(w, a, b, lo, hi, f);
      });
    } else if (s[0] == sizeof(Out) && s[1] == 0 && s[2] == sizeof(In)) {
      contiguous_out(stream, o, n, [&](Out* __restrict w, int64_t lo, int64_t hi) {
        binary_span<false, true>(w, a, b, lo, hi, f);
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
