// CPU capability dispatch (Note [CPU capability dispatch] in CMakeLists.txt).
//
// The hot kernel translation units include this header first. CMake compiles
// each of them once per capability with -DEMBER_CPU_CAPABILITY=DEFAULT|AVX2|AVX512
// and the matching -m flags; EMBER_CPU_NS names a namespace per capability so
// that the copies' non-inline code (loops.h, reduce_engine.h) never merges.
// Each copy's registration (EMBER_REGISTER_CPU_KERNELS) fills the DispatchStubs only in
// the selected copy.
#pragma once
#include <cstdint>

#include "ember/kernels/registration.h"

namespace ember::cpu {

enum class CpuCapability : int { DEFAULT = 0, AVX2 = 1, AVX512 = 2 };

/// The capability the kernels run with: the best the CPU supports among those
/// compiled in, capped by the environment variable EMBER_CPU_CAPABILITY
/// (default|avx2|avx512; never above what the CPU supports). Decided once.
CpuCapability selected_cpu_capability();
/// The best capability this CPU supports (compiled in or not).
CpuCapability supported_cpu_capability();
/// Whether the kernels were compiled for `c` (EMBER_CPU_DISPATCH; DEFAULT always).
bool cpu_capability_compiled(CpuCapability c);
/// "default", "avx2" or "avx512".
const char* cpu_capability_name(CpuCapability c);

/// The widest vector the translation unit's capability flags allow, in bytes (GCC vector
/// extensions: `T __attribute__((vector_size(kVecBytes)))`). Internal linkage, so each
/// per-capability copy of a kernel file sees its own value.
#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX2__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif

}  // namespace ember::cpu

#ifdef EMBER_CPU_CAPABILITY
#define EMBER_CPU_DISPATCHED 1  // this file is compiled once per capability
#else
#define EMBER_CPU_DISPATCHED 0
#define EMBER_CPU_CAPABILITY DEFAULT
#endif
#define EMBER_CPU_NS_CAT2(a) cap_##a
#define EMBER_CPU_NS_CAT(a) EMBER_CPU_NS_CAT2(a)
/// cap_DEFAULT, cap_AVX2, cap_AVX512
#define EMBER_CPU_NS EMBER_CPU_NS_CAT(EMBER_CPU_CAPABILITY)
#define EMBER_THIS_CPU_CAPABILITY ::ember::cpu::CpuCapability::EMBER_CPU_CAPABILITY
/// True in the one compiled copy whose kernels are to be registered.
#define EMBER_CPU_CAPABILITY_SELECTED() \
  (::ember::cpu::selected_cpu_capability() == EMBER_THIS_CPU_CAPABILITY)

/// A CPU kernel file's registration (Note [Kernel registration], kernels/registration.h):
/// in a file compiled once per capability only the selected copy registers; any other file
/// always does.
#define EMBER_REGISTER_CPU_KERNELS(family) \
  EMBER_REGISTER_KERNELS_IF(CPU, family, !EMBER_CPU_DISPATCHED || EMBER_CPU_CAPABILITY_SELECTED())
