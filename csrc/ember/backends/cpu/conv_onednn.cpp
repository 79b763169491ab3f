// Note [oneDNN convolution]
// float32 1-d/2-d convolutions on the CPU through oneDNN (the library PyTorch's CPU
// convolutions use), where it is faster than ember's own kernels (the passes and
// shapes of onednn_wanted below, measured in docs/ARCHITECTURE.md). oneDNN is an
// optional engine, never linked: built against its 2.x headers where they are found
// (Debian's libdnnl-dev, installed by tools/install_deps.sh), `libdnnl.so.2` is
// dlopened on first use; without headers at build time, without the library at run
// time, with EMBER_ONEDNN=0 in the environment or ember.backends.mkldnn.enabled = False,
// the slots stay empty or decline and the convolution takes ember's own paths
// (backends/cpu/nn_conv.cpp, conv_direct.cpp).
//
// Each call wraps ember's contiguous NCHW tensors as oneDNN memory, lets oneDNN pick
// its blocked layouts (format `any`), and reorders into and out of them: oneDNN's
// AVX2 kernels on nChw8c blocks, plus the reorders, beat im2col + GEMM where the
// channel counts are multiples of 8. The primitives of a geometry are cached per
// thread; the blocked buffers are per-thread scratch that only grows.
// Threads: the Debian build runs on OpenMP, held at one thread; several threads split
// the batch over ember's own pool (run_batched).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/backends/cpu/capability.h"
#include "ember/backends/cpu/conv_onednn.h"
#include "ember/core/allocator.h"
#include "ember/core/flags.h"
#include "ember/core/parallel.h"
#include "ember/kernels/stubs/nn_conv.h"

#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>) && !defined(EMBER_NO_ONEDNN)
#include <oneapi/dnnl/dnnl.h>
#if DNNL_VERSION_MAJOR == 2
#define EMBER_ONEDNN_HEADERS 1
#endif
#endif
#endif

#ifdef EMBER_ONEDNN_HEADERS
#include <dlfcn.h>

namespace ember::cpu {
namespace {

#define EMBER_DNNL_FNS(X)                                \
  X(dnnl_engine_create)                                  \
  X(dnnl_stream_create)                                  \
  X(dnnl_stream_wait)                                    \
  X(dnnl_memory_desc_init_by_tag)                        \
  X(dnnl_memory_desc_equal)                              \
  X(dnnl_memory_desc_get_size)                           \
  X(dnnl_memory_create)                                  \
  X(dnnl_memory_destroy)                                 \
  X(dnnl_dilated_convolution_forward_desc_init)          \
  X(dnnl_dilated_convolution_backward_data_desc_init)    \
  X(dnnl_dilated_convolution_backward_weights_desc_init) \
  X(dnnl_primitive_desc_create)                          \
  X(dnnl_primitive_desc_destroy)                         \
  X(dnnl_primitive_desc_query_md)                        \
  X(dnnl_reorder_primitive_desc_create)                  \
  X(dnnl_primitive_create)                               \
  X(dnnl_primitive_destroy)                              \
  X(dnnl_primitive_execute)

struct Api {
#define EMBER_DNNL_PTR(name) decltype(&::name) name = nullptr;
  EMBER_DNNL_FNS(EMBER_DNNL_PTR)
#undef EMBER_DNNL_PTR
  void (*omp_set_num_threads)(int) = nullptr;
  dnnl_engine_t engine = nullptr;
};

// The library, loaded once; nullptr when it is missing or incomplete.
const Api* load_api() {
  const char* env = std::getenv("EMBER_ONEDNN");
  if (env && std::strcmp(env, "0") == 0) return nullptr;
  void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return nullptr;
  static Api a;
  bool ok = true;
#define EMBER_DNNL_SYM(name)                                       \
  a.name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name)); \
  ok = ok && a.name != nullptr;
  EMBER_DNNL_FNS(EMBER_DNNL_SYM)
#undef EMBER_DNNL_SYM
  // (libgomp is libdnnl's dependency: found through its handle)
  a.omp_set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(lib, "omp_set_num_threads"));
  if (!ok || a.dnnl_engine_create(&a.engine, dnnl_cpu, 0) != dnnl_success) return nullptr;
  return &a;
}

const Api* api() {
  static const Api* a = load_api();
  return a;
}

enum Pass : int { kFwd = 0, kBwdData = 1, kBwdWeights = 2 };

// Which passes oneDNN takes: where it measured faster than ember's own kernels
// (docs/ARCHITECTURE.md, "oneDNN"; 1 thread). Its blocked kernels beat im2col + GEMM in the
// forward and the input gradient of spatial (k > 1) kernels with channels in multiples of 8
// (ResNet's 3x3 stages: forward 35 -> 28 ms, input gradient 39 -> 18 ms at 64 channels on
// 56x56, batch 8, measured with AVX2). With AVX2 it lost on images smaller than 14x14
// outputs (the batch-chunk GEMM won); with AVX-512 (oneDNN's brgemm kernels) it wins there
// too: ResNet's 512-channel 7x7 stage forward 21 -> 15 ms, forward + backward 60 -> 51 ms,
// 64 channels on 4x4 forward 0.72 -> 0.26 ms (batch 32). With other channel counts ember's
// kernels stay faster (3x3 and 5x5 stems of 3 channels: 24 vs 28 ms for VGG's at batch 8),
// except the forward of a 7x7 stem (ResNet's conv1: 27 -> 21 ms at batch 8, 3.4 -> 2.3 ms
// at batch 1); its input gradient is 2x slower on oneDNN. The weight gradient stays on
// ember's per-image GEMMs with AVX2; with AVX-512 and nChw16c blocks (channels in multiples
// of 16) oneDNN's wins, where weight_grad_split_pays. ember's own kernels stay faster for 1x1
// kernels (a GEMM on the image itself, no reorders; equal at ResNet's shapes) and for one
// input channel (the direct kernel: 0.36 vs 1.27 ms for the tutorial's first layer).
bool avx512_cpu() {
  static const bool yes = supported_cpu_capability() == CpuCapability::AVX512;
  return yes;
}

bool onednn_wanted(Pass pass, int64_t groups, int64_t C, int64_t Co, const ConvGeom& g) {
  if (groups != 1 || C == 1) return false;
  if (pass == kBwdWeights && !(avx512_cpu() && C % 16 == 0 && Co % 16 == 0)) return false;
  const int64_t area = g.k[1] * g.k[2];
  if (area == 1) return false;
  if (C % 8 != 0 || Co % 8 != 0) return pass == kFwd && area >= 49;
  return avx512_cpu() || g.out[1] * g.out[2] >= 196;
}

std::atomic<int64_t> calls{0};

struct Key {
  int64_t v[16];
  bool operator==(const Key& o) const { return std::memcmp(v, o.v, sizeof v) == 0; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t x : k.v) h = (h ^ size_t(x)) * 1099511628211ull;
    return h;
  }
};

// A reorder between a user layout and oneDNN's, or none where they are equal.
struct Reorder {
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_desc_t inner{};  // oneDNN's side
  size_t bytes = 0;
};

// The primitives of one pass at one geometry.
struct Plan {
  dnnl_primitive_t conv = nullptr;
  // forward: src, weights, dst; backward data: diff_dst, weights, diff_src;
  // backward weights: src, diff_dst, diff_weights (index 2 is always the output)
  dnnl_memory_desc_t user[3]{};
  Reorder re[3];
  dnnl_memory_desc_t bias{};
  bool has_bias = false;
};

bool ok(dnnl_status_t s) { return s == dnnl_success; }

// Note [oneDNN's OpenMP threads]
// oneDNN sizes a primitive's work split from omp_get_max_threads() when the primitive is
// *created*, and runs it with `omp parallel num_threads(n)`, which overrides the calling
// thread's setting at execution. So the thread count is pinned to one before a plan is made,
// not only before it runs: the first plan of a process used to be made before that, and ran
// on every core under ember.set_num_threads(1) (ResNet-18's 56x56 stage on two cores at
// "one thread").
void one_omp_thread(const Api* a) {
  if (a->omp_set_num_threads) a->omp_set_num_threads(1);
}

// Scratch for one call: blocked copies of the operands, from ember's caching allocator
// (Note [Caching host allocator]), so that steady-state calls reuse warm blocks of exactly
// their size, 2-MiB aligned and huge-page advised where large.
struct Scratch {
  DataPtr buf[3];
  ~Scratch() {
    for (auto& b : buf)
      if (b.deleter) b.deleter(b.ctx);
  }
  void* get(int i, size_t bytes) {
    buf[i] = cpu_allocator()->allocate(bytes);
    return buf[i].ptr;
  }
};

struct Cache {
  std::unordered_map<Key, std::unique_ptr<Plan>, KeyHash> plans;
  dnnl_stream_t stream = nullptr;
  ~Cache() {
    const Api* a = api();
    if (!a) return;
    for (auto& kv : plans) {
      Plan& p = *kv.second;
      if (p.conv) a->dnnl_primitive_destroy(p.conv);
      for (auto& r : p.re)
        if (r.prim) a->dnnl_primitive_destroy(r.prim);
    }
  }
};

Cache& cache() {
  static thread_local Cache c;
  return c;
}

void md_tag(dnnl_memory_desc_t* md, std::vector<int64_t> dims, dnnl_format_tag_t tag) {
  api()->dnnl_memory_desc_init_by_tag(md, int(dims.size()), dims.data(), dnnl_f32, tag);
}

// The reorder from `from` to `to` (nullptr prim where they are equal).
bool make_reorder(Reorder& r, const dnnl_memory_desc_t& user, const dnnl_memory_desc_t& inner,
                  bool into_inner) {
  const Api* a = api();
  r.inner = inner;
  r.bytes = a->dnnl_memory_desc_get_size(&inner);
  if (a->dnnl_memory_desc_equal(&user, &inner)) return true;
  dnnl_primitive_desc_t pd = nullptr;
  const dnnl_memory_desc_t* src = into_inner ? &user : &inner;
  const dnnl_memory_desc_t* dst = into_inner ? &inner : &user;
  if (!ok(a->dnnl_reorder_primitive_desc_create(&pd, src, a->engine, dst, a->engine, nullptr)))
    return false;
  const bool made = ok(a->dnnl_primitive_create(&r.prim, pd));
  a->dnnl_primitive_desc_destroy(pd);
  return made;
}

// Note [oneDNN's layouts]
// With format `any`, oneDNN 2.6 on an AVX-512 CPU picks its brgemm convolution over NHWC
// (acdb) activations and Acdb64a weights. Its direct kernels over nChw16c blocks
// (jit:avx512_core, what PyTorch's oneDNN 3.x runs for NCHW tensors) were as fast or faster
// at every ResNet and tutorial shape measured, forward and input gradient, and their weight
// reorder is cheaper, which counts in a network, where each layer's weights come cold from
// memory on every call (ResNet-18's 512-channel 3x3 weights, 9.4 MB: 0.97 ms to reorder for
// the brgemm kernel, 0.58 ms in PyTorch). ResNet-18's 20 convolutions in sequence, 1 thread:
// 40.5 -> 35.9 ms at batch 1 (PyTorch 35.3), 268 -> 254 ms at batch 8 (PyTorch 277).
// The plan of `pass` for this geometry, built on first use; nullptr where oneDNN
// has no implementation for it.
Plan* plan_for(Pass pass, int64_t N, int64_t Co, bool bias, const ConvGeom& g) {
  const int64_t C = g.channels, H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t kh = g.k[1], kw = g.k[2];
  Key key{{int64_t(pass), N, C, Co, H, W, kh, kw, g.stride[1], g.stride[2], g.pad[1], g.pad[2],
           g.dil[1], g.dil[2], int64_t(bias), 0}};
  Cache& c = cache();
  auto it = c.plans.find(key);
  if (it != c.plans.end()) return it->second.get();
  if (c.plans.size() > 256) c.plans.clear();  // (leaks nothing: unique_ptr; primitives below)
  const Api* a = api();
  one_omp_thread(a);
  // pad_r such that the output sizes come out as ember computed them (padding='same'
  // pads the end more); oneDNN takes dilation minus one
  int64_t pad_r[2];
  const int64_t in[2] = {H, W}, out[2] = {OH, OW}, k[2] = {kh, kw};
  for (int i = 0; i < 2; ++i) {
    pad_r[i] =
        (out[i] - 1) * g.stride[i + 1] + (k[i] - 1) * g.dil[i + 1] + 1 - in[i] - g.pad[i + 1];
    if (pad_r[i] < 0) return nullptr;
  }
  const int64_t strides[2] = {g.stride[1], g.stride[2]};
  const int64_t dil[2] = {g.dil[1] - 1, g.dil[2] - 1};
  const int64_t pad_l[2] = {g.pad[1], g.pad[2]};
  dnnl_memory_desc_t src_u, w_u, dst_u, b_u, src_a, w_a, dst_a, b_a;
  md_tag(&src_u, {N, C, H, W}, dnnl_nchw);
  md_tag(&w_u, {Co, C, kh, kw}, dnnl_oihw);
  md_tag(&dst_u, {N, Co, OH, OW}, dnnl_nchw);
  md_tag(&b_u, {Co}, dnnl_x);
  // Activations in nChw16c blocks where the channels allow, on AVX-512 (Note [oneDNN's
  // layouts]); else oneDNN picks.
  const dnnl_format_tag_t act =
      avx512_cpu() && C % 16 == 0 && Co % 16 == 0 ? dnnl_aBcd16b : dnnl_format_tag_any;
  md_tag(&src_a, {N, C, H, W}, act);
  md_tag(&w_a, {Co, C, kh, kw}, dnnl_format_tag_any);
  md_tag(&dst_a, {N, Co, OH, OW}, act);
  md_tag(&b_a, {Co}, dnnl_x);
  auto plan = std::make_unique<Plan>();
  plan->bias = b_u;
  plan->has_bias = bias;
  dnnl_convolution_desc_t fd;
  const bool fwd = pass == kFwd;
  if (!ok(a->dnnl_dilated_convolution_forward_desc_init(
          &fd, fwd ? dnnl_forward_inference : dnnl_forward_training, dnnl_convolution_direct,
          &src_a, &w_a, (fwd && bias) ? &b_a : nullptr, &dst_a, strides, dil, pad_l, pad_r)))
    return nullptr;
  dnnl_primitive_desc_t fpd = nullptr, pd = nullptr;
  if (!ok(a->dnnl_primitive_desc_create(&fpd, &fd, nullptr, a->engine, nullptr))) return nullptr;
  if (fwd) {
    pd = fpd;
    fpd = nullptr;
  } else {
    dnnl_convolution_desc_t bd;
    const dnnl_status_t st =
        pass == kBwdData
            ? a->dnnl_dilated_convolution_backward_data_desc_init(
                  &bd, dnnl_convolution_direct, &src_a, &w_a, &dst_a, strides, dil, pad_l, pad_r)
            : a->dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct,
                                                                     &src_a, &w_a, nullptr, &dst_a,
                                                                     strides, dil, pad_l, pad_r);
    if (!ok(st) || !ok(a->dnnl_primitive_desc_create(&pd, &bd, nullptr, a->engine, fpd))) {
      a->dnnl_primitive_desc_destroy(fpd);
      return nullptr;
    }
    a->dnnl_primitive_desc_destroy(fpd);
  }
  auto q = [&](dnnl_query_t what) { return *a->dnnl_primitive_desc_query_md(pd, what, 0); };
  bool made = true;
  if (pass == kFwd) {
    plan->user[0] = src_u, plan->user[1] = w_u, plan->user[2] = dst_u;
    made = make_reorder(plan->re[0], src_u, q(dnnl_query_src_md), true) &&
           make_reorder(plan->re[1], w_u, q(dnnl_query_weights_md), true) &&
           make_reorder(plan->re[2], dst_u, q(dnnl_query_dst_md), false);
  } else if (pass == kBwdData) {
    plan->user[0] = dst_u, plan->user[1] = w_u, plan->user[2] = src_u;
    made = make_reorder(plan->re[0], dst_u, q(dnnl_query_diff_dst_md), true) &&
           make_reorder(plan->re[1], w_u, q(dnnl_query_weights_md), true) &&
           make_reorder(plan->re[2], src_u, q(dnnl_query_diff_src_md), false);
  } else {
    plan->user[0] = src_u, plan->user[1] = dst_u, plan->user[2] = w_u;
    made = make_reorder(plan->re[0], src_u, q(dnnl_query_src_md), true) &&
           make_reorder(plan->re[1], dst_u, q(dnnl_query_diff_dst_md), true) &&
           make_reorder(plan->re[2], w_u, q(dnnl_query_diff_weights_md), false);
  }
  made = made && ok(a->dnnl_primitive_create(&plan->conv, pd));
  a->dnnl_primitive_desc_destroy(pd);
  if (!made) {
    if (plan->conv) a->dnnl_primitive_destroy(plan->conv);
    for (auto& r : plan->re)
      if (r.prim) a->dnnl_primitive_destroy(r.prim);
    return nullptr;
  }
  Plan* p = plan.get();
  c.plans.emplace(key, std::move(plan));
  return p;
}

// One owned dnnl memory over `ptr`.
struct Mem {
  dnnl_memory_t m = nullptr;
  Mem(const dnnl_memory_desc_t& md, void* ptr) {
    api()->dnnl_memory_create(&m, &md, api()->engine, ptr);
  }
  ~Mem() {
    if (m) api()->dnnl_memory_destroy(m);
  }
  Mem(const Mem&) = delete;
  Mem& operator=(const Mem&) = delete;
};

bool exec(dnnl_primitive_t p, std::vector<dnnl_exec_arg_t> args) {
  Cache& c = cache();
  const Api* a = api();
  if (!c.stream && !ok(a->dnnl_stream_create(&c.stream, a->engine, dnnl_stream_default_flags)))
    return false;
  return ok(a->dnnl_primitive_execute(p, c.stream, int(args.size()), args.data()));
}

// Runs the plan: in0, in1 are the user inputs (NCHW / OIHW), out the user output.
bool run_pass(Pass pass, Plan& p, const void* in0, const void* in1, void* out, const void* bias) {
  const Api* a = api();
  one_omp_thread(a);
  Scratch s;
  const void* ins[2] = {in0, in1};
  std::unique_ptr<Mem> inner[3];
  for (int i = 0; i < 2; ++i) {
    if (!p.re[i].prim) {
      inner[i] = std::make_unique<Mem>(p.re[i].inner, const_cast<void*>(ins[i]));
      continue;
    }
    Mem user(p.user[i], const_cast<void*>(ins[i]));
    inner[i] = std::make_unique<Mem>(p.re[i].inner, s.get(i, p.re[i].bytes));
    if (!exec(p.re[i].prim, {{DNNL_ARG_FROM, user.m}, {DNNL_ARG_TO, inner[i]->m}})) return false;
  }
  inner[2] = std::make_unique<Mem>(p.re[2].inner, p.re[2].prim ? s.get(2, p.re[2].bytes) : out);
  std::vector<dnnl_exec_arg_t> args;
  std::unique_ptr<Mem> b;
  if (pass == kFwd) {
    args = {
        {DNNL_ARG_SRC, inner[0]->m}, {DNNL_ARG_WEIGHTS, inner[1]->m}, {DNNL_ARG_DST, inner[2]->m}};
    if (p.has_bias) {
      b = std::make_unique<Mem>(p.bias, const_cast<void*>(bias));
      args.push_back({DNNL_ARG_BIAS, b->m});
    }
  } else if (pass == kBwdData) {
    args = {{DNNL_ARG_DIFF_DST, inner[0]->m},
            {DNNL_ARG_WEIGHTS, inner[1]->m},
            {DNNL_ARG_DIFF_SRC, inner[2]->m}};
  } else {
    args = {{DNNL_ARG_SRC, inner[0]->m},
            {DNNL_ARG_DIFF_DST, inner[1]->m},
            {DNNL_ARG_DIFF_WEIGHTS, inner[2]->m}};
  }
  if (!exec(p.conv, args)) return false;
  if (p.re[2].prim) {
    Mem user(p.user[2], out);
    if (!exec(p.re[2].prim, {{DNNL_ARG_FROM, inner[2]->m}, {DNNL_ARG_TO, user.m}})) return false;
  }
  return ok(a->dnnl_stream_wait(cache().stream));
}

// Whether oneDNN may take this convolution at all (dtype, dims, switches).
bool usable(const Tensor& t, const ConvGeom& g) {
  if (t.dtype() != DType::Float32) return false;
  if (g.k[0] != 1 || g.in[0] != 1 || g.out[0] != 1 || g.pad[0] != 0) return false;
  if (!backend_flags().mkldnn_enabled.load(std::memory_order_relaxed)) return false;
  return api() != nullptr;
}

// A pass whose images are independent (the forward, the input gradient) over ember's
// thread pool: the batch in one slab per thread, each slab one single-threaded oneDNN
// call (in0 and out batched, `in0_image` / `out_image` floats per image; in1 the
// weights). OpenMP's own threads are not used: on a busy machine they spin and lose
// whole scheduler slices (measured 2 threads: 56x56x64 3x3 forward 0.56x PyTorch's time
// on ember's kernels, 0.97x on oneDNN's OpenMP threads).
// One image and several threads (batch-1 inference), forward: the threads split the output
// channels instead, in multiples of 8 (oneDNN's block): each part is a convolution over all
// input channels with its slice of the weights and bias, writing its own contiguous slice of
// the output. (ResNet-18 at batch 1 and 2 threads: its 56x56 to 14x14 3x3 layers ran on one.)
bool run_channel_split(int64_t threads, int64_t Co, bool has_bias, const ConvGeom& g,
                       const float* x, const float* w, float* y, const void* bias) {
  const int64_t blocks = Co / 8, parts = std::min(threads, blocks);
  auto lo = [&](int64_t t) { return blocks * t / parts * 8; };
  for (int64_t t = 0; t < parts; ++t)  // every part's plan exists before the pool starts
    if (!plan_for(kFwd, 1, lo(t + 1) - lo(t), has_bias, g)) return false;
  const int64_t w_per_co = g.channels * g.k_numel();
  std::atomic<bool> failed{false};
  parallel_for(0, parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t c0 = lo(t), c1 = lo(t + 1);
      Plan* p = plan_for(kFwd, 1, c1 - c0, has_bias, g);
      const void* bp = has_bias ? static_cast<const float*>(bias) + c0 : nullptr;
      if (!p || !run_pass(kFwd, *p, x, w + c0 * w_per_co, y + c0 * g.out_numel(), bp))
        failed = true;
    }
  });
  return !failed;
}

// How many slabs of images a batched pass splits into: one per pool thread, at most N.
int64_t slab_count(int64_t N) {
  const int64_t threads = in_parallel_region() ? 1 : get_num_threads();
  return std::min<int64_t>(threads, N);
}

bool run_batched(Pass pass, int64_t N, int64_t Co, bool has_bias, const ConvGeom& g,
                 const float* in0, int64_t in0_image, const float* in1, float* out,
                 int64_t out_image, const void* bias) {
  const int64_t threads = in_parallel_region() ? 1 : get_num_threads();
  if (pass == kFwd && N == 1 && threads > 1 && Co >= 16)
    return run_channel_split(threads, Co, has_bias, g, in0, in1, out, bias);
  const int64_t T = slab_count(N);
  // the plans of both slab sizes exist before the pool starts (declines come here)
  if (!plan_for(pass, N / T, Co, has_bias, g) || !plan_for(pass, (N + T - 1) / T, Co, has_bias, g))
    return false;
  std::atomic<bool> failed{false};
  parallel_for(0, T, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t n0 = N * t / T, n1 = N * (t + 1) / T;
      if (n1 == n0) continue;
      Plan* p = plan_for(pass, n1 - n0, Co, has_bias, g);
      if (!p || !run_pass(pass, *p, in0 + n0 * in0_image, in1, out + n0 * out_image, bias))
        failed = true;
    }
  });
  return !failed;
}

bool onednn_fwd(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                int64_t groups, const ConvGeom& g) {
  if (!usable(x, g) || !onednn_wanted(kFwd, groups, g.channels, w.sizes()[0], g)) return false;
  if (bias.defined() && (bias.strides()[0] != 1 || bias.dtype() != DType::Float32)) return false;
  const int64_t Co = w.sizes()[0];
  if (!run_batched(kFwd, x.sizes()[0], Co, bias.defined(), g, x.data<float>(),
                   g.channels * g.in_numel(), w.data<float>(), y.data<float>(), Co * g.out_numel(),
                   bias.defined() ? bias.data_ptr() : nullptr))
    return false;
  calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Whether the weight gradient over several threads pays on oneDNN: each thread's slab makes a
// whole weight-sized partial sum (reordered out of oneDNN's layout, then added up), so it
// does where a slab's input holds at least as many values as the weights. 2 threads, batch 8,
// fwd+bwd ms, ember's per-image GEMMs -> oneDNN (PyTorch): 64 ch 56x56 29.5 -> 27.0 (27.7),
// 128 ch 28x28 27.6 -> 25.0 (25.4); but 256 ch 14x14 26.2 -> 28.4 (24.8) and 512 ch 7x7
// 27.3 -> 30.5 (25.8), where the weights outnumber a slab's input 3x and 24x. One thread
// (no partial sums) pays at all of them: 55.9 -> 53.3, 52.7 -> 48.9, 49.6 -> 47.7, and
// 512 ch 7x7 60.5 -> 51.2 (PyTorch 50.5).
bool weight_grad_split_pays(int64_t N, int64_t Co, const ConvGeom& g) {
  const int64_t T = slab_count(N);
  return T <= 1 || Co * g.k_numel() <= (N / T) * g.in_numel();
}

// The weight gradient over the pool: each thread's slab of images into its own buffer (the
// first thread's straight into gw), summed after in a fixed order.
bool run_weight_grad(int64_t N, int64_t Co, const ConvGeom& g, const float* x, const float* gy,
                     float* gw) {
  const int64_t T = slab_count(N);
  if (!plan_for(kBwdWeights, N / T, Co, false, g) ||
      !plan_for(kBwdWeights, (N + T - 1) / T, Co, false, g))
    return false;
  const int64_t wn = Co * g.channels * g.k_numel();
  const int64_t x_image = g.channels * g.in_numel(), gy_image = Co * g.out_numel();
  std::vector<float> part(size_t((T - 1) * wn));
  std::atomic<bool> failed{false};
  parallel_for(0, T, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t n0 = N * t / T, n1 = N * (t + 1) / T;
      Plan* p = plan_for(kBwdWeights, n1 - n0, Co, false, g);
      float* dst = t == 0 ? gw : part.data() + (t - 1) * wn;
      if (!p || !run_pass(kBwdWeights, *p, x + n0 * x_image, gy + n0 * gy_image, dst, nullptr))
        failed = true;
    }
  });
  if (failed) return false;
  for (int64_t t = 1; t < T; ++t) {
    const float* src = part.data() + (t - 1) * wn;
    for (int64_t i = 0; i < wn; ++i) gw[i] += src[i];
  }
  return true;
}

bool onednn_bwd(const Tensor& gx, const Tensor& gw, const Tensor& x, const Tensor& w,
                const Tensor& gy, int64_t groups, const ConvGeom& g) {
  const int64_t N = gy.sizes()[0], Co = gy.sizes()[1];
  if (!usable(gy, g)) return false;
  if (gx.defined() && !onednn_wanted(kBwdData, groups, g.channels, Co, g)) return false;
  if (gw.defined() && !onednn_wanted(kBwdWeights, groups, g.channels, Co, g)) return false;
  if (gw.defined() && !weight_grad_split_pays(N, Co, g)) return false;
  if (gx.defined() &&
      !run_batched(kBwdData, N, Co, false, g, gy.data<float>(), Co * g.out_numel(), w.data<float>(),
                   gx.data<float>(), g.channels * g.in_numel(), nullptr))
    return false;
  if (gw.defined() &&
      !run_weight_grad(N, Co, g, x.data<float>(), gy.data<float>(), gw.data<float>()))
    return false;
  calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

EMBER_REGISTER_CPU_KERNELS(conv_onednn) {
  // the slots are filled only where the library loads (on first use of a slot
  // would do too, but is_available() must answer without running a convolution)
  if (!api()) return;
  conv_engine_fwd_stub.fns[int(DeviceType::CPU)] = onednn_fwd;
  conv_engine_bwd_stub.fns[int(DeviceType::CPU)] = onednn_bwd;
}

}  // namespace

int64_t onednn_conv_calls() { return calls.load(std::memory_order_relaxed); }

}  // namespace ember::cpu

#else

namespace ember::cpu {
int64_t onednn_conv_calls() { return 0; }
}  // namespace ember::cpu

#endif  // EMBER_ONEDNN_HEADERS
