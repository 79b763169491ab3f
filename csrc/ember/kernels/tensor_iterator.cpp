#include "ember/kernels/tensor_iterator.h"

#include <algorithm>

#include "ember/core/parallel.h"
#include "ember/core/profiler.h"

namespace ember {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t ia = int64_t(a.size()) - 1 - int64_t(i), ib = int64_t(b.size()) - 1 - int64_t(i);
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1, "The size of tensor a (", sa,
                ") must match the size of tensor b (", sb, ") at non-singleton dimension ",
                n - 1 - i, " (shapes ", shape_str(a), " and ", shape_str(b), ")");
    out[n - 1 - i] = sa == 1 ? sb : sa;
  }
  return out;
}

Tensor expand_to(const Tensor& t, const Shape& shape, const char* op) {
  if (t.sizes() == shape) return t;
  int64_t nd = int64_t(shape.size()), td = t.dim();
  EMBER_CHECK(td <= nd, op, ": the number of sizes provided (", nd,
              ") must be greater or equal to the number of dimensions in the tensor (", td, ")");
  Shape st(nd);
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t j = i - (nd - td);
    if (j < 0) {
      st[i] = 0;
      continue;
    }
    int64_t s = t.sizes()[j];
    if (s == shape[i]) {
      st[i] = s == 1 ? 0 : t.strides()[j];
    } else {
      EMBER_CHECK(s == 1, op, ": the expanded size of the tensor (", shape[i],
                  ") must match the existing size (", s, ") at non-singleton dimension ", i,
                  ".  Target sizes: ", shape_str(shape), ".  Tensor sizes: ", shape_str(t.sizes()));
      st[i] = 0;
    }
  }
  return make_view(t, shape, st, t.storage_offset());
}

TensorIterator::TensorIterator(std::initializer_list<Tensor> operands, int noutputs,
                               const Shape& shape)
    : ntensors_(int(operands.size())), noutputs_(noutputs) {
  EMBER_CHECK(ntensors_ <= kMaxOperands, "TensorIterator: too many operands");
  numel_ = 1;
  for (int64_t s : shape) numel_ *= s;
  int i = 0;
  int64_t nd = int64_t(shape.size());
  // Every operand contiguous at exactly `shape` (an op on same-shaped contiguous tensors, the
  // common case): the loop is one flat dimension, and reordering has nothing to do.
  bool flat = nd > 0 && numel_ > 0;
  for (const Tensor& t : operands) flat = flat && t.sizes() == shape && t.is_contiguous();
  if (flat) {
    shape_.resize(1);
    shape_[0] = numel_;
    for (const Tensor& t : operands) {
      operands_[i] = t;
      data_[i] = t.data_ptr();
      strides_[i].resize(1);
      strides_[i][0] = t.element_size();
      ++i;
    }
    return;
  }
  // Loop shape innermost-first: reverse the logical dims.
  shape_.resize(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) shape_[d] = shape[nd - 1 - d];
  for (const Tensor& t : operands) {
    operands_[i] = t;
    data_[i] = t.data_ptr();
    int64_t es = t.element_size();
    Shape& st = strides_[i];
    st.resize(static_cast<size_t>(nd));
    int64_t td = t.dim();
    // Inputs may have fewer dims (broadcast from the left) or size-1 dims (stride 0). An empty
    // operand makes the loop empty and its strides (maybe 2**63 - 1) are never stepped: 0, with
    // no overflowing byte stride (found by tests/test_fuzz.py).
    const bool empty = t.numel() == 0;
    for (int64_t d = 0; d < nd; ++d) {
      int64_t j = td - 1 - d;
      st[d] = (!empty && j >= 0 && t.sizes()[j] != 1) ? t.strides()[j] * es : 0;
    }
    ++i;
  }
  reorder_and_coalesce();
}

void TensorIterator::reorder_and_coalesce() {
  int64_t nd = int64_t(shape_.size());
  if (nd <= 1) return;
  // 1. Order dims so that the innermost has the smallest strides (outputs
  //    decide first, then inputs). Insertion sort keeps equal dims in place.
  SmallVec<int64_t, 8> perm(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) perm[d] = d;
  auto should_swap = [&](int64_t d0, int64_t d1) {  // is d1 "inner" to d0?
    for (int t = 0; t < ntensors_; ++t) {
      int64_t s0 = strides_[t][d0], s1 = strides_[t][d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return false;
      if (s1 < s0) return true;
    }
    return false;
  };
  for (int64_t i = 1; i < nd; ++i)
    for (int64_t j = i; j > 0 && should_swap(perm[j - 1], perm[j]); --j)
      std::swap(perm[j - 1], perm[j]);
  bool identity = true;
  for (int64_t d = 0; d < nd; ++d) identity &= perm[d] == d;
  if (!identity) {
    Shape s(static_cast<size_t>(nd));
    for (int64_t d = 0; d < nd; ++d) s[d] = shape_[perm[d]];
    shape_ = s;
    for (int t = 0; t < ntensors_; ++t) {
      Shape st(static_cast<size_t>(nd));
      for (int64_t d = 0; d < nd; ++d) st[d] = strides_[t][perm[d]];
      strides_[t] = st;
    }
  }
  // 2. Coalesce: merge dim d+1 into the running dim when every operand steps
  //    through them as one.
  int64_t prev = 0;
  for (int64_t d = 1; d < nd; ++d) {
    bool can = true;
    for (int t = 0; t < ntensors_ && can; ++t) {
      int64_t sp = strides_[t][prev], sd = strides_[t][d];
      can = shape_[prev] == 1 || shape_[d] == 1 || sp * shape_[prev] == sd;
    }
    if (can) {
      for (int t = 0; t < ntensors_; ++t)
        if (shape_[prev] == 1) strides_[t][prev] = strides_[t][d];
      shape_[prev] *= shape_[d];
    } else {
      ++prev;
      if (prev != d) {
        shape_[prev] = shape_[d];
        for (int t = 0; t < ntensors_; ++t) strides_[t][prev] = strides_[t][d];
      }
    }
  }
  shape_.resize(size_t(prev + 1));
  for (int t = 0; t < ntensors_; ++t) strides_[t].resize(size_t(prev + 1));
}

bool TensorIterator::is_contiguous() const {
  if (shape_.size() > 1) return false;
  for (int t = 0; t < ntensors_; ++t)
    if (!shape_.empty() && shape_[0] > 1 && strides_[t][0] != operands_[t].element_size())
      return false;
  return true;
}

void TensorIterator::serial_for_each(const Loop& loop, int64_t begin, int64_t end) const {
  if (begin >= end) return;
  int nd = ndim();
  char* ptrs[kMaxOperands];
  int64_t inner_strides[kMaxOperands];
  if (nd == 0) {
    for (int t = 0; t < ntensors_; ++t) {
      ptrs[t] = data_[t];
      inner_strides[t] = 0;
    }
    loop(ptrs, inner_strides, 1);
    return;
  }
  for (int t = 0; t < ntensors_; ++t) inner_strides[t] = strides_[t][0];
  if (nd == 1) {  // one row: no multi-index
    for (int t = 0; t < ntensors_; ++t) ptrs[t] = data_[t] + begin * inner_strides[t];
    loop(ptrs, inner_strides, end - begin);
    return;
  }
  int64_t inner = shape_[0];
  // Multi-index of `begin` over the outer dims.
  SmallVec<int64_t, 8> idx(static_cast<size_t>(nd), 0);
  int64_t rem = begin;
  for (int d = 0; d < nd; ++d) {
    idx[d] = rem % shape_[d];
    rem /= shape_[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    for (int t = 0; t < ntensors_; ++t) {
      char* p = data_[t];
      for (int d = 0; d < nd; ++d) p += idx[d] * strides_[t][d];
      ptrs[t] = p;
    }
    int64_t n = std::min(inner - idx[0], end - pos);
    loop(ptrs, inner_strides, n);
    pos += n;
    idx[0] += n;
    for (int d = 0; d < nd - 1 && idx[d] >= shape_[d]; ++d) {
      idx[d] = 0;
      ++idx[d + 1];
    }
  }
}

void TensorIterator::for_each(const Loop& loop, int64_t grain) const {
  if (numel_ == 0) return;
  if (numel_ < grain || get_num_threads() == 1) {
    serial_for_each(loop, 0, numel_);
    return;
  }
  parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) { serial_for_each(loop, b, e); });
}

// Declared in core/profiler.h (which cannot include this layer): the profiler's
// "Input Shapes" of a kernel call are the iterator's inputs; the outputs come first.
void profiler::RecordScope::add_input(const TensorIterator& it) {
  if (!active_) return;
  for (int i = it.noutputs(); i < it.ntensors(); ++i) add_input(it.tensor(i));
}

}  // namespace ember
