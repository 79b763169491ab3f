// Chooses the CPU capability of the dispatched kernels (see capability.h).
// Compiled with the baseline flags: it runs before anything is known of the CPU.
#include "ember/backends/cpu/capability.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "ember/core/error.h"

#ifndef EMBER_CPU_CAPABILITIES
#define EMBER_CPU_CAPABILITIES "DEFAULT"
#endif

namespace ember::cpu {
bool cpu_capability_compiled(CpuCapability c) {
  const std::string list = "," EMBER_CPU_CAPABILITIES ",";
  const char* n = c == CpuCapability::AVX512 ? ",AVX512,"
                  : c == CpuCapability::AVX2 ? ",AVX2,"
                                             : ",DEFAULT,";
  return list.find(n) != std::string::npos;
}

namespace {

CpuCapability choose() {
  CpuCapability best = supported_cpu_capability();
  if (const char* env = std::getenv("EMBER_CPU_CAPABILITY"); env && *env) {
    CpuCapability want;
    if (!std::strcmp(env, "default"))
      want = CpuCapability::DEFAULT;
    else if (!std::strcmp(env, "avx2"))
      want = CpuCapability::AVX2;
    else if (!std::strcmp(env, "avx512"))
      want = CpuCapability::AVX512;
    else
      want = best;  // unknown value: ignored, as PyTorch's ATEN_CPU_CAPABILITY
    if (int(want) < int(best)) best = want;
  }
  while (best != CpuCapability::DEFAULT && !cpu_capability_compiled(best))
    best = CpuCapability(int(best) - 1);
  return best;
}

}  // namespace

CpuCapability supported_cpu_capability() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return CpuCapability::AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuCapability::AVX2;
#endif
  return CpuCapability::DEFAULT;
}

CpuCapability selected_cpu_capability() {
  static const CpuCapability c = choose();
  return c;
}

const char* cpu_capability_name(CpuCapability c) {
  switch (c) {
    case CpuCapability::AVX512:
      return "avx512";
    case CpuCapability::AVX2:
      return "avx2";
    default:
      return "default";
  }
}

}  // namespace ember::cpu
