// cummax / cummin and mode (ops/surface_scan.h).
#include "ember/ops/surface_scan.h"
#include "ember/jit/trace_hook.h"

#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<CumMaxMinFn> cummaxmin_stub("cummax");
DispatchStub<ModeFn> mode_stub("mode");
DispatchStub<ScatterReduceFn> scatter_reduce_stub("scatter_reduce");

Tensor narrow_to(const Tensor& src, const Shape& sizes);

namespace {

// The gradient of an op that picks input elements by `indices` along `dim`.
Tensor pick_backward(const Tensor& g, const Tensor& indices, int64_t dim, const Shape& in_sizes) {
  return scatter_add(zeros(in_sizes, g.dtype(), g.device()), dim, indices, g);
}

std::pair<Tensor, Tensor> cum_extreme(const Tensor& a, int64_t dim, bool is_max) {
  if (a.dim() == 0) {
    wrap_dim(dim, 0);
    return {clone(a), zeros(Shape{}, DType::Int64, a.device())};
  }
  dim = wrap_dim(dim, a.dim());
  autograd::RecordScope rs({&a});
  Tensor src = contiguous(movedim(a, Shape{dim}, Shape{-1}));
  Tensor v = empty(src.sizes(), a.dtype(), a.device()),
         i = empty(src.sizes(), DType::Int64, a.device());
  if (a.numel()) cummaxmin_stub.get(a.device())(v, i, src, is_max);
  Tensor values = movedim(v, Shape{-1}, Shape{dim}), indices = movedim(i, Shape{-1}, Shape{dim});
  rs.done();
  if (rs.rec && is_floating(a.dtype())) {
    Shape in_sizes = a.sizes();
    auto node =
        autograd::record(is_max ? "CummaxBackward0" : "CumminBackward0", {&a}, values,
                         [dim, in_sizes](autograd::LambdaNode& n,
                                         autograd::variable_list&& g) -> autograd::variable_list {
                           return {pick_backward(g[0], n.unpack(0), dim, in_sizes)};
                         });
    node->saved.emplace_back(indices, false);
  }
  return {values, indices};
}

}  // namespace

std::pair<Tensor, Tensor> cummax(const Tensor& a, int64_t dim) {
  EMBER_TRACE("aten::cummax(Tensor self, int dim) -> (Tensor, Tensor)", cummax, a, dim);
  return cum_extreme(a, dim, true);
}
std::pair<Tensor, Tensor> cummin(const Tensor& a, int64_t dim) {
  EMBER_TRACE("aten::cummin(Tensor self, int dim) -> (Tensor, Tensor)", cummin, a, dim);
  return cum_extreme(a, dim, false);
}

std::pair<Tensor, Tensor> mode(const Tensor& a, int64_t dim, bool keepdim) {
  EMBER_TRACE("aten::mode(Tensor self, int dim, bool keepdim) -> (Tensor, Tensor)", mode, a, dim,
              keepdim);
  int64_t nd = std::max<int64_t>(a.dim(), 1);
  dim = wrap_dim(dim, nd);
  Tensor x = a.dim() == 0 ? reshape(a, Shape{1}) : a;
  EMBER_CHECK_INDEX(x.sizes()[dim] > 0, "mode(): Expected reduction dim ", dim,
                    " to have non-zero size.");
  autograd::RecordScope rs({&a});
  Tensor src = contiguous(movedim(x, Shape{dim}, Shape{-1}));
  int64_t n = src.sizes().back(), rows_n = n ? src.numel() / n : 0;
  Shape out_sizes = src.sizes();
  out_sizes.pop_back();
  Tensor v = empty(out_sizes, a.dtype(), a.device()),
         i = empty(out_sizes, DType::Int64, a.device());
  if (rows_n) mode_stub.get(a.device())(v, i, reshape(src, Shape{rows_n, n}));
  if (keepdim && a.dim() > 0) {
    v = unsqueeze(v, dim);
    i = unsqueeze(i, dim);
  }
  if (a.dim() == 0) {
    v = reshape(v, Shape{});
    i = reshape(i, Shape{});
  }
  rs.done();
  if (rs.rec && is_floating(a.dtype())) {
    Shape in_sizes = a.sizes();
    bool kd = keepdim || a.dim() == 0;
    auto node = autograd::record(
        "ModeBackward0", {&a}, v,
        [dim, in_sizes, kd](autograd::LambdaNode& nd_,
                            autograd::variable_list&& g) -> autograd::variable_list {
          Tensor idx = nd_.unpack(0), gg = g[0];
          if (in_sizes.empty()) return {gg};
          if (!kd) {
            idx = unsqueeze(idx, dim);
            gg = unsqueeze(gg, dim);
          }
          return {pick_backward(gg, idx, dim, in_sizes)};
        });
    node->saved.emplace_back(i, false);
  }
  return {v, i};
}

namespace {

ScatterReduce reduce_kind(const std::string& r, const char* op) {
  if (r == "sum") return ScatterReduce::Sum;
  if (r == "prod") return ScatterReduce::Prod;
  if (r == "mean") return ScatterReduce::Mean;
  if (r == "amax") return ScatterReduce::Amax;
  if (r == "amin") return ScatterReduce::Amin;
  raise(ErrorKind::Runtime, op,
        "(): reduce argument must be either sum, prod, mean, amax or amin, got ", r);
}

Tensor scatter_reduce_raw(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          ScatterReduce k, bool include_self) {
  autograd::GradModeGuard no_grad(false);
  Tensor out = clone(contiguous(self));
  if (index.numel()) {
    Tensor s = contiguous(narrow_to(src, index.sizes()));
    scatter_reduce_stub.get(self.device())(out, dim, contiguous(index), s, k, include_self);
  }
  return out;
}

}  // namespace

Tensor narrow_to(const Tensor& src, const Shape& sizes) {
  Tensor s = src;
  for (int64_t d = 0; d < src.dim(); ++d)
    if (s.sizes()[d] != sizes[d]) s = narrow(s, d, 0, sizes[d]);
  return s;
}

Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
  EMBER_TRACE(
      "aten::scatter_reduce(Tensor self, int dim, Tensor index, Tensor src, str reduce, bool "
      "include_self) -> Tensor",
      scatter_reduce, self, dim, index, src, reduce, include_self);
  const char* op = "scatter_reduce";
  ScatterReduce k = reduce_kind(reduce, op);
  EMBER_CHECK(index.dtype() == DType::Int64, op, "(): Expected dtype int64 for index, but got ",
              dtype_name(index.dtype()));
  EMBER_CHECK(src.dtype() == self.dtype(), op,
              "(): Expected self.dtype to be equal to src.dtype, but got ",
              dtype_name(self.dtype()), " and ", dtype_name(src.dtype()));
  check_same_device_strict(self, index, op);  // the kernels read all three on self's device
  check_same_device_strict(self, src, op);
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  dim = wrap_dim(dim, nd);
  EMBER_CHECK(index.dim() == self.dim() && src.dim() == self.dim(), op,
              "(): Index tensor must have the same number of dimensions as self and src tensors");
  for (int64_t d = 0; d < self.dim(); ++d) {
    EMBER_CHECK(index.sizes()[d] <= src.sizes()[d], op, "(): Expected index ",
                shape_str(index.sizes()), " to be smaller than src ", shape_str(src.sizes()),
                " apart from dimension ", dim);
    if (d != dim)
      EMBER_CHECK(index.sizes()[d] <= self.sizes()[d], op, "(): Expected index ",
                  shape_str(index.sizes()), " to be smaller than self ", shape_str(self.sizes()),
                  " apart from dimension ", dim);
  }
  if (self.dim() == 0) {
    Tensor r = scatter_reduce(reshape(self, Shape{1}), 0, reshape(index, Shape{-1}),
                              reshape(src, Shape{-1}), reduce, include_self);
    return reshape(r, Shape{});
  }
  autograd::RecordScope rs({&self, &src});
  Tensor out = scatter_reduce_raw(self, dim, index, src, k, include_self);
  rs.done();
  if (rs.rec && is_floating(self.dtype())) {
    Shape ssz = self.sizes(), srcsz = src.sizes();
    auto node = autograd::record(
        "ScatterReduceBackward0", {&self, &src}, out,
        [dim, k, include_self, ssz, srcsz](autograd::LambdaNode& n,
                                           autograd::variable_list&& g) -> autograd::variable_list {
          Tensor self_ = n.unpack(0), index_ = n.unpack(1), src_ = n.unpack(2), out_ = n.unpack(3),
                 gout = g[0];
          Tensor srcn = narrow_to(src_, index_.sizes());
          // Positions some index reaches (self's gradient is masked there unless included).
          Tensor hit = scatter_reduce_raw(zeros(ssz, DType::Float64, gout.device()), dim, index_,
                                          ones(index_.sizes(), DType::Float64, gout.device()),
                                          ScatterReduce::Sum, true);
          Tensor reached = binary(BinaryOp::gt, hit, wrap_scalar(Scalar(0.0)));
          Tensor gself, gsrc;
          auto pad_src = [&](const Tensor& gs) {
            if (gs.sizes() == srcsz) return gs;
            Tensor full_g = zeros(srcsz, gs.dtype(), gs.device());
            copy_(narrow_to(full_g, gs.sizes()), gs);
            return full_g;
          };
          switch (k) {
            case ScatterReduce::Sum:
              gself = include_self ? gout : where(reached, wrap_scalar(Scalar(0.0)), gout);
              gsrc = gather(gout, dim, index_);
              break;
            case ScatterReduce::Mean: {
              Tensor cnt =
                  binary(BinaryOp::add, hit, wrap_scalar(Scalar(include_self ? 1.0 : 0.0)));
              cnt = where(binary(BinaryOp::eq, cnt, wrap_scalar(Scalar(0.0))),
                          wrap_scalar(Scalar(1.0)), cnt);
              Tensor gm = binary(BinaryOp::div, gout, to_dtype(cnt, gout.dtype()));
              gself = include_self ? gm : where(reached, wrap_scalar(Scalar(0.0)), gout);
              gsrc = gather(gm, dim, index_);
              break;
            }
            case ScatterReduce::Amax:
            case ScatterReduce::Amin: {
              // The gradient is shared evenly among the values equal to the result.
              Tensor self_hit =
                  binary(BinaryOp::logical_and, binary(BinaryOp::eq, self_, out_),
                         include_self ? reached : zeros(ssz, DType::Bool, gout.device()));
              Tensor src_hit = binary(BinaryOp::eq, srcn, gather(out_, dim, index_));
              Tensor nties =
                  scatter_reduce_raw(to_dtype(self_hit, gout.dtype()), dim, index_,
                                     to_dtype(src_hit, gout.dtype()), ScatterReduce::Sum, true);
              nties = where(binary(BinaryOp::eq, nties, wrap_scalar(Scalar(0.0))),
                            wrap_scalar(Scalar(1.0)), nties);
              Tensor share = binary(BinaryOp::div, gout, nties);
              gself = where(reached, where(self_hit, share, wrap_scalar(Scalar(0.0))), gout);
              gsrc = where(src_hit, gather(share, dim, index_), wrap_scalar(Scalar(0.0)));
              break;
            }
            case ScatterReduce::Prod: {
              // d out / d x = out / x (inputs without zeros).
              gself = include_self ? binary(BinaryOp::div, binary(BinaryOp::mul, gout, out_), self_)
                                   : where(reached, wrap_scalar(Scalar(0.0)), gout);
              gself = where(reached, gself, gout);
              gsrc = binary(BinaryOp::div, gather(binary(BinaryOp::mul, gout, out_), dim, index_),
                            srcn);
              break;
            }
          }
          return {n.should_compute_output(0) ? gself : Tensor(),
                  n.should_compute_output(1) ? pad_src(gsrc) : Tensor()};
        });
    node->saved.emplace_back(self, false);
    node->saved.emplace_back(index, false);
    node->saved.emplace_back(src, false);
    node->saved.emplace_back(out, true);
  }
  return out;
}

Tensor index_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                    const std::string& reduce, bool include_self) {
  EMBER_TRACE(
      "aten::index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, bool "
      "include_self) -> Tensor",
      index_reduce, self, dim, index, source, reduce, include_self);
  EMBER_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
              "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got ",
              reduce, ".");
  EMBER_CHECK_INDEX(index.dim() <= 1, "index_reduce_(): Index is supposed to be a vector");
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  dim = wrap_dim(dim, nd);
  EMBER_CHECK(source.dim() == self.dim(),
              "index_reduce_(): Source and destination must have the same number of dims");
  int64_t n = index.numel();
  EMBER_CHECK_INDEX(
      self.dim() == 0 || source.sizes()[dim] == n, "index_reduce_(): Number of indices (", n,
      ") should be equal to source.size(dim) (", self.dim() ? source.sizes()[dim] : 1, ")");
  if (self.dim() == 0)
    return scatter_reduce(self, 0, reshape(index, Shape{}), reshape(source, Shape{}), reduce,
                          include_self);
  // The index broadcast over source's shape: index[k] at position k along dim.
  Shape vs(static_cast<size_t>(self.dim()), 1);
  vs[dim] = n;
  Tensor idx = contiguous(expand(reshape(index, vs), source.sizes()));
  return scatter_reduce(self, dim, idx, source, reduce, include_self);
}

}  // namespace ember
