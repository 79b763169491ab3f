// Kernel slot of flip/roll/repeat_interleave (front-ends in ops/join.cpp).
// Backend-neutral: backends include this, never ops/join.h.
#pragma once
#include <optional>
#include <vector>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

// Note [Index remap]
// flip, roll and repeat_interleave with per-element repeats all write a fresh
// contiguous `out` whose element at (i0, ..., ik) is the input element at
// element offset tables[0][i0] + ... + tables[k][ik] from in.data_ptr(). One
// byte-moving kernel does them all on any input strides and any dtype; the
// front-ends only build the per-dim offset tables (O(sum of sizes) memory).
// Kernels may assume every table entry addresses an element of `in`.
using RemapTables = std::vector<std::vector<int64_t>>;
using RemapFn = void (*)(const Tensor& out, const Tensor& in, const RemapTables& tables);
extern DispatchStub<RemapFn> index_remap_stub;

}  // namespace ember
