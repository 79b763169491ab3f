// Recurrent layers: the front-ends, the time loop and BPTT.
//
// Note [Recurrent layers]
// A layer in one direction is one primitive (rnn_layer) and records one
// autograd node. Its input is always "packed": x [N, I] holds the time steps
// one after the other, step t being batch_sizes[t] rows (non-increasing), so a
// padded batch is the special case batch_sizes = {B, ..., B} and a
// PackedSequence needs no other code path. The forward
//   1. projects every step's input at once: one GEMM x @ W_ih^T (+ biases),
//   2. per step, adds h[:r] @ W_hh^T into that step's gate rows (one GEMM of r
//      rows) and runs the fused gate kernel (rnn_step_fwd_stub), which turns
//      the pre-activations into the activations in place and writes c and h.
// Only the first r = batch_sizes[t] rows of the state take part in step t;
// the rows of sequences that ended keep their last state, which is why h_n is
// simply the final state (and, running backwards, why a sequence starts from
// h0 at its own last step). The activations, c_prev and h_prev of every row are
// kept for BPTT, which walks the steps the other way with the fused backward
// kernel and one GEMM per step for dh_prev, then gets dx, dW_ih, dW_hh and the
// bias gradients each with one GEMM (or sum) over all steps.
#include "ember/ops/nn_rnn.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>

#include "ember/autograd/derivatives/nn_rnn.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/random.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<RnnStepFwdKernel> rnn_step_fwd_stub("rnn_step_forward");
DispatchStub<RnnStepBwdKernel> rnn_step_bwd_stub("rnn_step_backward");
DispatchStub<RnnAccumulateKernel> rnn_accumulate_stub("rnn_accumulate");
DispatchStub<RnnPackKernel> rnn_pack_stub("rnn_pack");
DispatchStub<RnnGemmKernel> rnn_gemm_stub("rnn_gemm");

namespace {

const char* mode_name(RnnMode m) {
  switch (m) {
    case RnnMode::RnnTanh:
      return "rnn_tanh";
    case RnnMode::RnnRelu:
      return "rnn_relu";
    case RnnMode::Lstm:
      return "lstm";
    case RnnMode::Gru:
      return "gru";
  }
  return "rnn";
}

std::vector<int64_t> offsets_of(const std::vector<int64_t>& bs) {
  std::vector<int64_t> off(bs.size() + 1, 0);
  for (size_t t = 0; t < bs.size(); ++t) off[t + 1] = off[t] + bs[t];
  return off;
}

Tensor rows(const Tensor& a, int64_t start, int64_t n) { return narrow(a, 0, start, n); }

void check_layer_args(RnnMode mode, const Tensor& x, const std::vector<int64_t>& bs,
                      const Tensor& h0, const Tensor& c0, const RnnWeights& w) {
  const char* op = mode_name(mode);
  const int64_t G = rnn_gate_count(mode);
  EMBER_CHECK(x.dim() == 2, op, ": expected packed input of 2 dims, got ", x.dim());
  EMBER_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, op,
              ": expected a float32 or float64 input, got ", dtype_name(x.dtype()));
  EMBER_CHECK(!bs.empty(), op, ": expected a non-empty sequence");
  int64_t total = 0;
  for (size_t t = 0; t < bs.size(); ++t) {
    EMBER_CHECK(bs[t] > 0 && (t == 0 || bs[t] <= bs[t - 1]), op,
                ": batch_sizes must be positive and non-increasing");
    total += bs[t];
  }
  EMBER_CHECK(total == x.size(0), op, ": batch_sizes sum to ", total, " but the input has ",
              x.size(0), " rows");
  EMBER_CHECK(w.w_ih.defined() && w.w_ih.dim() == 2 && w.w_ih.size(0) % G == 0 &&
                  w.w_ih.size(1) == x.size(1),
              op, ": weight_ih of shape ", shape_str(w.w_ih.sizes()),
              " does not match the input of shape ", shape_str(x.sizes()));
  const int64_t H = w.w_ih.size(0) / G;
  const int64_t Hout = w.w_hr.defined() ? w.w_hr.size(0) : H;
  EMBER_CHECK(w.w_hh.dim() == 2 && w.w_hh.size(0) == G * H && w.w_hh.size(1) == Hout, op,
              ": weight_hh has shape ", shape_str(w.w_hh.sizes()), ", expected [", G * H, ", ",
              Hout, "]");
  if (w.w_hr.defined())
    EMBER_CHECK(mode == RnnMode::Lstm && w.w_hr.dim() == 2 && w.w_hr.size(1) == H, op,
                ": weight_hr has shape ", shape_str(w.w_hr.sizes()));
  for (const Tensor* b : {&w.b_ih, &w.b_hh})
    if (b->defined())
      EMBER_CHECK(b->dim() == 1 && b->size(0) == G * H, op, ": bias has shape ",
                  shape_str(b->sizes()), ", expected [", G * H, "]");
  EMBER_CHECK(h0.dim() == 2 && h0.size(0) == bs[0] && h0.size(1) == Hout, op,
              ": Expected hidden size [", bs[0], ", ", Hout, "], got ", shape_str(h0.sizes()));
  if (mode == RnnMode::Lstm)
    EMBER_CHECK(c0.defined() && c0.dim() == 2 && c0.size(0) == bs[0] && c0.size(1) == H, op,
                ": Expected cell size [", bs[0], ", ", H, "], got ",
                c0.defined() ? shape_str(c0.sizes()) : std::string("None"));
  for (const Tensor* t : {&h0, &c0, &w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh, &w.w_hr})
    if (t->defined()) {
      EMBER_CHECK(t->dtype() == x.dtype(), op, ": expected all tensors to have dtype ",
                  dtype_name(x.dtype()), ", got ", dtype_name(t->dtype()));
      EMBER_CHECK(t->device() == x.device(), op, ": expected all tensors to be on the same device");
    }
}

/// The forward without autograd; fills `saved` when non-null.
std::vector<Tensor> layer_impl(RnnMode mode, const Tensor& x_in, const std::vector<int64_t>& bs,
                               const Tensor& h0, const Tensor& c0, const RnnWeights& w,
                               bool reverse, RnnSaved* saved) {
  autograd::GradModeGuard no_grad(false);
  const int64_t G = rnn_gate_count(mode), H = w.w_ih.size(0) / G;
  const int64_t Hout = h0.size(1), B = h0.size(0), N = x_in.size(0);
  checked_mul(N, G * H, "rnn gates");
  const DType dt = x_in.dtype();
  const Device dev = x_in.device();
  const int64_t T = int64_t(bs.size());
  const std::vector<int64_t> off = offsets_of(bs);
  const bool lstm = mode == RnnMode::Lstm, gru = mode == RnnMode::Gru;
  const bool rnn = !lstm && !gru;
  const bool proj = w.w_hr.defined();

  Tensor x = contiguous(x_in);
  // 1. input projection of every step: one GEMM (biases folded in).
  Tensor P = empty({N, G * H}, dt, dev);
  Tensor bias;
  if (w.b_ih.defined()) bias = gru ? w.b_ih : binary(BinaryOp::add, w.b_ih, w.b_hh);
  if (bias.defined())
    addmm_out(bias, x, t(w.w_ih), 1, 1, P);
  else
    mm_out(x, t(w.w_ih), P);

  Tensor h = clone(h0), c;
  if (!h.is_contiguous()) h = contiguous(h);
  if (lstm) c = contiguous(clone(c0));
  Tensor Y = rnn ? P : empty({N, Hout}, dt, dev);
  Tensor Hprev = saved ? empty({N, Hout}, dt, dev) : Tensor();
  Tensor Cprev = saved && lstm ? empty({N, H}, dt, dev) : Tensor();
  Tensor Hraw = proj ? empty({N, H}, dt, dev) : Tensor();
  Tensor HN = gru ? empty({N, H}, dt, dev) : Tensor();
  Tensor HG = gru ? empty({B, 3 * H}, dt, dev) : Tensor();
  Tensor cscratch = lstm && !saved ? empty({B, H}, dt, dev) : Tensor();
  Tensor whh_t = t(w.w_hh);
  auto fwd = rnn_step_fwd_stub.get(dev);
  // The recurrent weight packed once for every step (Note [Packed recurrent weights]).
  const RnnGemmKernel gemm = rnn_gemm_stub.fns[int(dev.type)];
  const Tensor whh_p = gemm ? rnn_pack_stub.fns[int(dev.type)](contiguous(w.w_hh), true) : Tensor();
  const Tensor bhh = gru && w.b_hh.defined() ? contiguous(w.b_hh) : Tensor();

  for (int64_t s = 0; s < T; ++s) {
    const int64_t ti = reverse ? T - 1 - s : s;
    const int64_t r = bs[ti], o = off[ti];
    Tensor Pt = rows(P, o, r), hs = rows(h, 0, r);
    if (saved) copy_(rows(Hprev, o, r), hs);
    RnnStepFwdArgs a{mode, r, H, Pt, Tensor(), hs, Tensor(), Tensor(), Tensor(), Tensor()};
    if (gru) {
      Tensor hg = rows(HG, 0, r);
      if (gemm)
        gemm(hg, hs, whh_p, bhh, false);
      else if (w.b_hh.defined())
        addmm_out(w.b_hh, hs, whh_t, 1, 1, hg);
      else
        mm_out(hs, whh_t, hg);
      a.hgates = hg;
      a.hn_out = rows(HN, o, r);
      a.h_new = rows(Y, o, r);
    } else if (gemm) {
      gemm(Pt, hs, whh_p, Tensor(), true);
    } else {
      addmm_(Pt, hs, whh_t);
    }
    if (lstm) {
      Tensor cs = rows(c, 0, r);
      Tensor cp = saved ? rows(Cprev, o, r) : rows(cscratch, 0, r);
      copy_(cp, cs);
      a.c_prev = cp;
      a.c_new = cs;
      a.h_new = proj ? rows(Hraw, o, r) : rows(Y, o, r);
    }
    fwd(a);
    if (proj) mm_out(rows(Hraw, o, r), t(w.w_hr), rows(Y, o, r));
    copy_(hs, rows(Y, o, r));
  }
  if (saved) {
    saved->gates = P;
    saved->c_prev = Cprev;
    saved->h_prev = Hprev;
    saved->h_raw = Hraw;
    saved->hn = HN;
  }
  return {Y, h, c};
}

}  // namespace

std::vector<Tensor> rnn_layer(RnnMode mode, const Tensor& x, const std::vector<int64_t>& bs,
                              const Tensor& h0, const Tensor& c0, const RnnWeights& w,
                              bool reverse) {
  check_layer_args(mode, x, bs, h0, c0, w);
  autograd::RecordScope scope({&x, &h0, &c0, &w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh, &w.w_hr});
  RnnSaved saved;
  std::vector<Tensor> out =
      layer_impl(mode, x, bs, h0, c0, w, reverse, scope.rec ? &saved : nullptr);
  if (scope.rec) {
    scope.done();
    autograd::record_rnn_layer(mode, x, bs, h0, c0, w, reverse, saved, out);
  }
  return out;
}

std::vector<Tensor> rnn_cell(RnnMode mode, const Tensor& input, const Tensor& h, const Tensor& c,
                             const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                             const Tensor& b_hh) {
  EMBER_TRACE(
      "aten::rnn_cell(int mode, Tensor input, Tensor h, Tensor? c, Tensor w_ih, Tensor w_hh, "
      "Tensor? b_ih, Tensor? b_hh) -> Tensor[]",
      rnn_cell, mode, input, h, c, w_ih, w_hh, b_ih, b_hh);
  RnnWeights w{w_ih, w_hh, b_ih, b_hh, Tensor()};
  return rnn_layer(mode, input, {input.size(0)}, h, c, w, false);
}

std::vector<Tensor> rnn_layer_backward(RnnMode mode, const Tensor& x,
                                       const std::vector<int64_t>& bs, const Tensor& h0,
                                       const Tensor& c0, const RnnWeights& w, bool reverse,
                                       const RnnSaved& sv, const Tensor& dy_in, const Tensor& dhn,
                                       const Tensor& dcn, const std::vector<bool>& mask) {
  (void)c0;
  autograd::GradModeGuard no_grad(false);
  const int64_t G = rnn_gate_count(mode), H = w.w_ih.size(0) / G;
  const int64_t Hout = h0.size(1), B = h0.size(0), N = x.size(0);
  const DType dt = x.dtype();
  const Device dev = x.device();
  const int64_t T = int64_t(bs.size());
  const std::vector<int64_t> off = offsets_of(bs);
  const bool lstm = mode == RnnMode::Lstm, gru = mode == RnnMode::Gru;
  const bool proj = w.w_hr.defined();

  Tensor dh = dhn.defined() ? contiguous(clone(dhn)) : zeros({B, Hout}, dt, dev);
  Tensor dc = lstm ? (dcn.defined() ? contiguous(clone(dcn)) : zeros({B, H}, dt, dev)) : Tensor();
  Tensor dy = dy_in.defined() ? contiguous(dy_in) : Tensor();
  Tensor DG = empty({N, G * H}, dt, dev);
  Tensor DGH = gru ? empty({N, 3 * H}, dt, dev) : Tensor();
  Tensor DHP = proj ? empty({N, Hout}, dt, dev) : Tensor();
  Tensor dhraw = proj ? empty({B, H}, dt, dev) : Tensor();
  Tensor ddirect = gru ? empty({B, H}, dt, dev) : Tensor();
  auto bwd = rnn_step_bwd_stub.get(dev);
  auto acc = rnn_accumulate_stub.get(dev);
  const RnnGemmKernel gemm = rnn_gemm_stub.fns[int(dev.type)];
  const Tensor whh_p =
      gemm ? rnn_pack_stub.fns[int(dev.type)](contiguous(w.w_hh), false) : Tensor();

  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t ti = reverse ? T - 1 - s : s;
    const int64_t r = bs[ti], o = off[ti];
    Tensor dhs = rows(dh, 0, r);
    if (dy.defined()) acc(dhs, rows(dy, o, r));
    Tensor dh_in = dhs;
    if (proj) {
      copy_(rows(DHP, o, r), dhs);
      dh_in = rows(dhraw, 0, r);
      mm_out(dhs, w.w_hr, dh_in);
    }
    RnnStepBwdArgs a{mode,     r,        H,        dh_in,    Tensor(),       rows(sv.gates, o, r),
                     Tensor(), Tensor(), Tensor(), Tensor(), rows(DG, o, r), Tensor(),
                     Tensor()};
    if (mode == RnnMode::RnnTanh || mode == RnnMode::RnnRelu) a.h_new = a.gates;
    if (lstm) {
      a.dc = rows(dc, 0, r);
      a.c_prev = rows(sv.c_prev, o, r);
    }
    if (gru) {
      a.h_prev = rows(sv.h_prev, o, r);
      a.hn = rows(sv.hn, o, r);
      a.dhgates = rows(DGH, o, r);
      a.dh_direct = rows(ddirect, 0, r);
    }
    bwd(a);
    if (gru) {
      copy_(dhs, a.dh_direct);
      if (gemm)
        gemm(dhs, a.dhgates, whh_p, Tensor(), true);
      else
        addmm_(dhs, a.dhgates, w.w_hh);
    } else if (gemm) {
      gemm(dhs, a.dgates, whh_p, Tensor(), false);
    } else {
      mm_out(a.dgates, w.w_hh, dhs);
    }
  }
  const Tensor& DGh = gru ? DGH : DG;
  std::vector<Tensor> g(8);
  if (mask[0]) g[0] = mm(DG, w.w_ih);
  if (mask[1]) g[1] = dh;
  if (mask[2] && lstm) g[2] = dc;
  if (mask[3]) g[3] = mm(t(DG), contiguous(x));
  if (mask[4]) g[4] = mm(t(DGh), sv.h_prev);
  if (mask[5] && w.b_ih.defined()) g[5] = sum(DG, Shape{0});
  if (mask[6] && w.b_hh.defined()) g[6] = sum(DGh, Shape{0});
  if (mask[7] && proj) g[7] = mm(t(DHP), sv.h_raw);
  return g;
}

std::vector<Tensor> rnn_layer_composite(RnnMode mode, const Tensor& x,
                                        const std::vector<int64_t>& bs, const Tensor& h0,
                                        const Tensor& c0, const RnnWeights& w, bool reverse) {
  const int64_t T = int64_t(bs.size()), B = h0.size(0);
  const std::vector<int64_t> off = offsets_of(bs);
  const bool lstm = mode == RnnMode::Lstm, gru = mode == RnnMode::Gru;
  auto U = [](UnaryOp op, const Tensor& a) { return unary(op, a); };
  auto add = [](const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, a, b); };
  auto mul = [](const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b); };
  auto lin = [](const Tensor& in, const Tensor& wt, const Tensor& b) {
    return b.defined() ? addmm(b, in, t(wt)) : mm(in, t(wt));
  };
  auto merge = [B](const Tensor& fresh, const Tensor& old, int64_t r) {
    return r < B ? cat({fresh, narrow(old, 0, r, B - r)}, 0) : fresh;
  };
  Tensor xp = lin(x, w.w_ih, w.b_ih);
  Tensor h = h0, c = c0;
  std::vector<Tensor> ys(static_cast<size_t>(T));
  for (int64_t s = 0; s < T; ++s) {
    const int64_t ti = reverse ? T - 1 - s : s;
    const int64_t r = bs[ti];
    Tensor xt = narrow(xp, 0, off[ti], r), hs = narrow(h, 0, 0, r);
    Tensor hg = lin(hs, w.w_hh, w.b_hh), hnew;
    if (lstm) {
      auto ch = chunk(add(xt, hg), 4, 1);
      Tensor i = U(UnaryOp::sigmoid, ch[0]), f = U(UnaryOp::sigmoid, ch[1]);
      Tensor gg = U(UnaryOp::tanh, ch[2]), o = U(UnaryOp::sigmoid, ch[3]);
      Tensor cn = add(mul(f, narrow(c, 0, 0, r)), mul(i, gg));
      hnew = mul(o, U(UnaryOp::tanh, cn));
      if (w.w_hr.defined()) hnew = mm(hnew, t(w.w_hr));
      c = merge(cn, c, r);
    } else if (gru) {
      auto xc = chunk(xt, 3, 1), hc = chunk(hg, 3, 1);
      Tensor rr = U(UnaryOp::sigmoid, add(xc[0], hc[0]));
      Tensor z = U(UnaryOp::sigmoid, add(xc[1], hc[1]));
      Tensor n = U(UnaryOp::tanh, add(xc[2], mul(rr, hc[2])));
      hnew = add(n, mul(z, binary(BinaryOp::sub, hs, n)));
    } else {
      hnew = U(mode == RnnMode::RnnTanh ? UnaryOp::tanh : UnaryOp::relu, add(xt, hg));
    }
    h = merge(hnew, h, r);
    ys[size_t(ti)] = hnew;
  }
  return {cat(ys, 0), h, lstm ? c : Tensor()};
}

std::vector<Tensor> rnn_forward(RnnMode mode, const Tensor& data, const std::vector<int64_t>& bs,
                                const Tensor& hx, const Tensor& cx,
                                const std::vector<Tensor>& params, bool has_biases,
                                int64_t num_layers, double dropout, bool train,
                                bool bidirectional) {
  EMBER_TRACE_RANDOM(
      "aten::rnn_forward(int mode, Tensor data, int[] bs, Tensor hx, Tensor cx, Tensor[] params, "
      "bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> Tensor[]",
      rnn_forward, mode, data, bs, hx, cx, params, has_biases, num_layers, dropout, train,
      bidirectional);
  const char* op = mode_name(mode);
  // Note [16-bit recurrent and attention math]: half and bfloat16 run the float kernels on
  // float copies (differentiable casts), and the results come back in the input's dtype.
  if (data.dtype() == DType::Float16 || data.dtype() == DType::BFloat16) {
    const DType dt = data.dtype();
    for (const Tensor* t : {&hx, &cx})  // the float copies below must not hide a mismatch
      EMBER_CHECK(!t->defined() || t->dtype() == dt,
                  "Input and hidden tensors are not the same dtype, found input tensor with ",
                  scalar_type_name(dt), " and hidden tensor with ", scalar_type_name(t->dtype()));
    auto up = [](const Tensor& t) { return t.defined() ? to_dtype(t, DType::Float32) : t; };
    std::vector<Tensor> ps;
    for (const Tensor& p : params) {
      EMBER_CHECK(p.dtype() == dt, op, ": expected all tensors to have dtype ", dtype_name(dt),
                  ", got ", dtype_name(p.dtype()));
      ps.push_back(up(p));
    }
    auto r = rnn_forward(mode, up(data), bs, up(hx), up(cx), ps, has_biases, num_layers, dropout,
                         train, bidirectional);
    for (Tensor& t : r)
      if (t.defined()) t = to_dtype(t, dt);
    return r;
  }
  const int64_t D = bidirectional ? 2 : 1;
  EMBER_CHECK(num_layers >= 1, op, ": num_layers must be at least 1, got ", num_layers);
  EMBER_CHECK(dropout >= 0 && dropout <= 1, op,
              ": dropout should be a number in range [0, 1] representing the probability of an "
              "element being zeroed, got ",
              dropout);
  const size_t per = params.size() / size_t(num_layers * D);
  const size_t want = 2 + (has_biases ? 2 : 0);
  EMBER_CHECK(per * size_t(num_layers * D) == params.size() && (per == want || per == want + 1), op,
              ": expected ", want * size_t(num_layers * D), " weights, got ", params.size());
  const bool proj = per == want + 1;
  EMBER_CHECK(hx.dim() == 3 && hx.size(0) == num_layers * D, op, ": Expected hidden size [",
              num_layers * D, ", ", bs.empty() ? 0 : bs[0], ", *], got ", shape_str(hx.sizes()));
  if (mode == RnnMode::Lstm)
    EMBER_CHECK(cx.defined() && cx.dim() == 3 && cx.size(0) == num_layers * D, op,
                ": Expected cell size [", num_layers * D, ", *, *]");
  Tensor layer_in = data;
  std::vector<Tensor> hs, cs;
  for (int64_t l = 0; l < num_layers; ++l) {
    std::vector<Tensor> ys;
    for (int64_t d = 0; d < D; ++d) {
      const size_t b = size_t(l * D + d) * per;
      RnnWeights w;
      w.w_ih = params[b];
      w.w_hh = params[b + 1];
      if (has_biases) {
        w.b_ih = params[b + 2];
        w.b_hh = params[b + 3];
      }
      if (proj) w.w_hr = params[b + want];
      Tensor h0 = select(hx, 0, l * D + d);
      Tensor c0 = mode == RnnMode::Lstm ? select(cx, 0, l * D + d) : Tensor();
      auto r = rnn_layer(mode, layer_in, bs, h0, c0, w, d == 1);
      ys.push_back(r[0]);
      hs.push_back(r[1]);
      if (mode == RnnMode::Lstm) cs.push_back(r[2]);
    }
    layer_in = D == 2 ? cat(ys, 1) : ys[0];
    if (dropout > 0 && train && l + 1 < num_layers) {
      Tensor keep = empty(layer_in.sizes(), layer_in.dtype(), layer_in.device());
      bernoulli_(keep, 1 - dropout);
      if (dropout < 1) keep = binary(BinaryOp::mul, keep, wrap_scalar(Scalar(1 / (1 - dropout))));
      layer_in = binary(BinaryOp::mul, layer_in, keep);
    }
  }
  return {layer_in, stack(hs, 0), mode == RnnMode::Lstm ? stack(cs, 0) : Tensor()};
}

std::vector<Tensor> pack_padded(const Tensor& input_in, const std::vector<int64_t>& lengths,
                                bool batch_first) {
  EMBER_TRACE("aten::pack_padded(Tensor input_in, int[] lengths, bool batch_first) -> Tensor[]",
              pack_padded, input_in, lengths, batch_first);
  Tensor input = batch_first ? transpose(input_in, 0, 1) : input_in;
  EMBER_CHECK(input.dim() >= 2, "pack_padded_sequence: expected input of at least 2 dims, got ",
              input.dim());
  const int64_t T = input.size(0), B = input.size(1);
  EMBER_CHECK(int64_t(lengths.size()) == B,
              "Expected `len(lengths)` to be equal to batch_size, but got ", lengths.size(),
              " (batch_size=", B, ")");
  EMBER_CHECK(B > 0, "pack_padded_sequence: empty batch");
  for (size_t b = 0; b < lengths.size(); ++b) {
    EMBER_CHECK(lengths[b] > 0,
                "Length of all samples has to be greater than 0, but found an element in "
                "'lengths' that is <= 0");
    EMBER_CHECK(
        b == 0 || lengths[b] <= lengths[b - 1],
        "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
        "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
        "pack_sequence to sidestep this requirement if you do not need ONNX exportability.");
  }
  EMBER_CHECK(lengths[0] <= T, "pack_padded_sequence: the longest length is ", lengths[0],
              " but the input has ", T, " steps");
  std::vector<int64_t> bs, idx;
  for (int64_t t = 0; t < lengths[0]; ++t) {
    int64_t n = 0;
    while (n < B && lengths[size_t(n)] > t) ++n;
    bs.push_back(n);
    for (int64_t b = 0; b < n; ++b) idx.push_back(checked_mul(t, B, "pack_padded_sequence") + b);
  }
  Shape flat = input.sizes();
  flat.erase(0);
  flat[0] = checked_mul(T, B, "pack_padded_sequence");
  Tensor data = index_select(reshape(input, flat), 0, int64_tensor(idx, input.device()));
  return {data, int64_tensor(bs, Device())};
}

Tensor pad_packed(const Tensor& data, const std::vector<int64_t>& bs, bool batch_first,
                  double padding_value, int64_t total_length) {
  EMBER_TRACE(
      "aten::pad_packed(Tensor data, int[] bs, bool batch_first, float padding_value, int "
      "total_length) -> Tensor",
      pad_packed, data, bs, batch_first, padding_value, total_length);
  EMBER_CHECK(!bs.empty() && data.dim() >= 1, "pad_packed_sequence: empty sequence");
  const int64_t T = int64_t(bs.size()), B = bs[0];
  const int64_t Tt = std::max(T, total_length);
  const std::vector<int64_t> off = offsets_of(bs);
  EMBER_CHECK(off[size_t(T)] == data.size(0), "pad_packed_sequence: batch_sizes sum to ",
              off[size_t(T)], " but data has ", data.size(0), " rows");
  const int64_t N = data.size(0);
  std::vector<int64_t> idx(size_t(checked_mul(Tt, B, "pad_packed_sequence")), N);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < bs[size_t(t)]; ++b) idx[size_t(t * B + b)] = off[size_t(t)] + b;
  Shape one = data.sizes();
  one[0] = 1;
  Tensor src = cat({data, full(one, Scalar(padding_value), data.dtype(), data.device())}, 0);
  Tensor out = index_select(src, 0, int64_tensor(idx, data.device()));
  Shape shp = data.sizes();
  shp[0] = B;
  shp.insert(0, Tt);
  out = view(out, shp);
  return batch_first ? transpose(out, 0, 1) : out;
}

Tensor pad_sequence(const std::vector<Tensor>& seqs, bool batch_first, double padding_value,
                    bool pad_left) {
  EMBER_TRACE(
      "aten::pad_sequence(Tensor[] sequences, bool batch_first, float padding_value, bool "
      "pad_left) -> Tensor",
      pad_sequence, seqs, batch_first, padding_value, pad_left);
  EMBER_CHECK(!seqs.empty(), "received an empty list of sequences");
  const Tensor& first = seqs[0];
  EMBER_CHECK(first.dim() >= 1, "pad_sequence: expected sequences of at least 1 dim");
  int64_t maxlen = 0;
  std::vector<int64_t> off(seqs.size() + 1, 0);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const Tensor& s = seqs[i];
    EMBER_CHECK(s.dim() == first.dim() && s.dtype() == first.dtype(),
                "pad_sequence: expected all sequences to have ", first.dim(), " dims and dtype ",
                dtype_name(first.dtype()), ", got ", shape_str(s.sizes()), " ",
                dtype_name(s.dtype()));
    for (int64_t d = 1; d < s.dim(); ++d)
      EMBER_CHECK(s.size(d) == first.size(d), "The size of tensor a (", s.size(d),
                  ") must match the size of tensor b (", first.size(d),
                  ") at non-singleton dimension ", d);
    maxlen = std::max(maxlen, s.size(0));
    off[i + 1] = off[i] + s.size(0);
  }
  const int64_t B = int64_t(seqs.size()), N = off[seqs.size()];
  // row (t, b) of the [maxlen, B] result reads row off[b] + t' of the concatenation, or
  // the padding row N.
  std::vector<int64_t> idx(size_t(checked_mul(maxlen, B, "pad_sequence")), N);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = seqs[size_t(b)].size(0), shift = pad_left ? maxlen - len : 0;
    for (int64_t t = 0; t < len; ++t) {
      const int64_t tt = t + shift;
      idx[size_t(batch_first ? b * maxlen + tt : tt * B + b)] = off[size_t(b)] + t;
    }
  }
  Shape one = first.sizes();
  one[0] = 1;
  std::vector<Tensor> parts(seqs.begin(), seqs.end());
  parts.push_back(full(one, Scalar(padding_value), first.dtype(), first.device()));
  Tensor src = cat(parts, 0);
  Shape shp = first.sizes();
  shp[0] = batch_first ? maxlen : B;
  shp.insert(0, batch_first ? B : maxlen);
  return view(index_select(src, 0, int64_tensor(idx, first.device())), shp);
}

}  // namespace ember
