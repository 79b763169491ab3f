// Kernel slots of cdist (front-end in ops/nn_misc.cpp): the direct p-norm kernel
// and the finishing pass of the matrix-product (Euclidean) formulation.
// Backend-neutral: backends include this, never ops/nn_misc.h.
#pragma once
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// out (B, P, R) contiguous <- || x1[b, i] - x2[b, j] ||_p for x1 (B, P, M) and
/// x2t (B, M, R) (x2 with its last two dims swapped), both contiguous, float32 or
/// float64 like out; P, R, M > 0. p = 0 counts the nonzero differences, p = inf
/// takes the largest.
using CdistFn = void (*)(const Tensor& out, const Tensor& x1, const Tensor& x2t, double p);
extern DispatchStub<CdistFn> cdist_stub;

/// In place on out (B, P, R) contiguous, which holds x1[b] @ x2[b]^T:
/// out <- sqrt(max(|x1[b, i]|^2 + |x2[b, j]|^2 - 2 out, 0)), for x1 (B, P, M) and
/// x2 (B, R, M) contiguous of out's dtype (float32 or float64).
using EuclideanFinishFn = void (*)(const Tensor& out, const Tensor& x1, const Tensor& x2);
extern DispatchStub<EuclideanFinishFn> euclidean_finish_stub;

}  // namespace ember
