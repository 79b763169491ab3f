// Bindings of recurrent layers (the time loop in C++) and attention. The
// Python layer (nn/_functional/rnn.py, attention.py) normalizes arguments and
// calls these private entry points.
#include "ember/ops/nn_rnn.h"
#include "ember/ops/nn_attention.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

using OptT = std::optional<Tensor>;

Tensor opt(const OptT& t) { return t ? *t : Tensor(); }

RnnMode mode_arg(int64_t m) {
  EMBER_CHECK_VALUE(m >= 0 && m <= 3, "rnn: unknown mode ", m);
  return RnnMode(int(m));
}

py::tuple result3(const std::vector<Tensor>& r) {
  return py::make_tuple(wrap(r[0]), wrap(r[1]), r[2].defined() ? wrap(r[2]) : py::none());
}

/// The hidden state argument: a Tensor (RNN, GRU) or [h, c] (LSTM).
void hidden_arg(RnnMode mode, py::handle hx, const char* op, Tensor& h, Tensor& c) {
  if (mode == RnnMode::Lstm) {
    EMBER_CHECK_TYPE(py::isinstance<py::sequence>(hx) && py::len(hx) == 2, op,
                     "(): argument 'hx' must be a sequence of two Tensors");
    auto seq = py::reinterpret_borrow<py::sequence>(hx);
    h = seq[0].cast<Tensor>();
    c = seq[1].cast<Tensor>();
  } else {
    h = hx.cast<Tensor>();
  }
}

/// torch.lstm / gru / rnn_tanh / rnn_relu, both overloads:
///   (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
///   (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
py::tuple rnn_full(RnnMode mode, const char* op, py::args a) {
  EMBER_CHECK_TYPE(py::len(a) == 9, op, "() takes 9 arguments, got ", py::len(a));
  Tensor *maybe_bs = nullptr, *third = nullptr;
  const bool packed =
      as_tensor(a[1], maybe_bs) && (mode == RnnMode::Lstm || as_tensor(a[2], third));
  const size_t o = packed ? 1 : 0;
  Tensor h, c;
  hidden_arg(mode, a[1 + o], op, h, c);
  auto params = a[2 + o].cast<std::vector<Tensor>>();
  bool has_biases = a[3 + o].cast<bool>();
  int64_t num_layers = a[4 + o].cast<int64_t>();
  double dropout = a[5 + o].cast<double>();
  bool train = a[6 + o].cast<bool>(), bidirectional = a[7 + o].cast<bool>();
  Tensor input = a[0].cast<Tensor>();
  std::vector<Tensor> r;
  if (packed) {
    std::vector<int64_t> bs;
    // batch_sizes lives on the CPU (as PyTorch's); one on a device is read through a copy.
    Tensor b = contiguous(to_dtype(to_device(*maybe_bs, Device()), DType::Int64));
    for (int64_t i = 0; i < b.numel(); ++i) bs.push_back(b.data<int64_t>()[i]);
    r = rnn_forward(mode, input, bs, h, c, params, has_biases, num_layers, dropout, train,
                    bidirectional);
  } else {
    bool batch_first = a[8].cast<bool>();
    EMBER_CHECK(input.dim() == 3, op, ": expected a 3-D input, got ", input.dim(), "-D");
    Tensor x = batch_first ? transpose(input, 0, 1) : input;
    const int64_t T = x.size(0), B = x.size(1);
    std::vector<int64_t> bs(size_t(T), B);
    r = rnn_forward(mode, reshape(x, {T * B, x.size(2)}), bs, h, c, params, has_biases, num_layers,
                    dropout, train, bidirectional);
    r[0] = view(r[0], {T, B, r[0].size(1)});
    if (batch_first) r[0] = transpose(r[0], 0, 1);
  }
  if (mode == RnnMode::Lstm) return py::make_tuple(wrap(r[0]), wrap(r[1]), wrap(r[2]));
  return py::make_tuple(wrap(r[0]), wrap(r[1]));
}

/// torch.lstm_cell / gru_cell / rnn_tanh_cell / rnn_relu_cell.
py::object rnn_cell(RnnMode mode, const char* op, const Tensor& input, py::handle hx,
                    const Tensor& w_ih, const Tensor& w_hh, const OptT& b_ih, const OptT& b_hh) {
  Tensor h, c;
  hidden_arg(mode, hx, op, h, c);
  EMBER_CHECK(input.dim() == 2, op, ": expected a 2-D input, got ", input.dim(), "-D");
  auto r = rnn_cell(mode, input, h, c, w_ih, w_hh, opt(b_ih), opt(b_hh));
  if (mode == RnnMode::Lstm) return py::make_tuple(wrap(r[1]), wrap(r[2]));
  return wrap(r[1]);
}

}  // namespace

void init_nn_rnn(py::module_& m) {
  struct Named {
    const char* name;
    const char* cell;
    RnnMode mode;
  };
  for (Named n : {Named{"lstm", "lstm_cell", RnnMode::Lstm}, Named{"gru", "gru_cell", RnnMode::Gru},
                  Named{"rnn_tanh", "rnn_tanh_cell", RnnMode::RnnTanh},
                  Named{"rnn_relu", "rnn_relu_cell", RnnMode::RnnRelu}}) {
    m.def(n.name, [n](py::args a) { return rnn_full(n.mode, n.name, a); });
    m.def(
        n.cell,
        [n](const Tensor& input, py::handle hx, const Tensor& w_ih, const Tensor& w_hh,
            const OptT& b_ih, const OptT& b_hh) {
          return rnn_cell(n.mode, n.cell, input, hx, w_ih, w_hh, b_ih, b_hh);
        },
        py::arg("input"), py::arg("hx"), py::arg("w_ih"), py::arg("w_hh"),
        py::arg("b_ih") = py::none(), py::arg("b_hh") = py::none());
  }
  m.def("_rnn_forward",
        [](int64_t mode, const Tensor& data, const std::vector<int64_t>& batch_sizes,
           const Tensor& hx, const OptT& cx, const std::vector<Tensor>& params, bool has_biases,
           int64_t num_layers, double dropout, bool train, bool bidirectional) {
          return result3(rnn_forward(mode_arg(mode), data, batch_sizes, hx, opt(cx), params,
                                     has_biases, num_layers, dropout, train, bidirectional));
        });
  m.def("_rnn_layer", [](int64_t mode, const Tensor& x, const std::vector<int64_t>& batch_sizes,
                         const Tensor& h0, const OptT& c0, const Tensor& w_ih, const Tensor& w_hh,
                         const OptT& b_ih, const OptT& b_hh, const OptT& w_hr, bool reverse) {
    RnnWeights w{w_ih, w_hh, opt(b_ih), opt(b_hh), opt(w_hr)};
    return result3(rnn_layer(mode_arg(mode), x, batch_sizes, h0, opt(c0), w, reverse));
  });
  m.def("_rnn_layer_composite", [](int64_t mode, const Tensor& x,
                                   const std::vector<int64_t>& batch_sizes, const Tensor& h0,
                                   const OptT& c0, const Tensor& w_ih, const Tensor& w_hh,
                                   const OptT& b_ih, const OptT& b_hh, const OptT& w_hr,
                                   bool reverse) {
    RnnWeights w{w_ih, w_hh, opt(b_ih), opt(b_hh), opt(w_hr)};
    return result3(rnn_layer_composite(mode_arg(mode), x, batch_sizes, h0, opt(c0), w, reverse));
  });
  m.def("_pack_padded_sequence",
        [](const Tensor& input, const std::vector<int64_t>& lengths, bool batch_first) {
          auto r = pack_padded(input, lengths, batch_first);
          return py::make_tuple(wrap(r[0]), wrap(r[1]));
        });
  m.def("_pad_packed_sequence", [](const Tensor& data, const std::vector<int64_t>& batch_sizes,
                                   bool batch_first, double padding_value, int64_t total_length) {
    return pad_packed(data, batch_sizes, batch_first, padding_value, total_length);
  });
  m.def("_pad_sequence",
        [](py::handle seqs, bool batch_first, double padding_value, bool pad_left) {
          return pad_sequence(tensor_list_arg(seqs, "pad_sequence", "sequences"), batch_first,
                              padding_value, pad_left);
        });
  m.def("_sdpa_flash", [](const Tensor& q, const Tensor& k, const Tensor& v, const OptT& mask,
                          bool is_causal, double scale, double dropout_p) {
    const Tensor m = opt(mask);
    py::gil_scoped_release nogil;  // hooks and storage releases take it back themselves
    return sdpa_flash(q, k, v, m, is_causal, scale, dropout_p);
  });
  // The scaled keep mask the next fused call with dropout_p would draw (it takes the same
  // generator block): tests compare the fused kernels with the math path under it.
  m.def("_sdpa_dropout_mask",
        [](int64_t B, int64_t H, int64_t L, int64_t S, double p, py::handle dtype) {
          EMBER_CHECK(p > 0 && p < 1, "_sdpa_dropout_mask: expected 0 < p < 1, got ", p);
          const DType dt = dtype_arg(dtype);
          EMBER_CHECK(is_floating(dt), "_sdpa_dropout_mask: expected a floating dtype, got ",
                      dtype_name(dt));
          return sdpa_dropout_mask(sdpa_reserve_dropout(p), B, H, L, S, dt);
        });
  m.def("_sdpa_math", [](const Tensor& q, const Tensor& k, const Tensor& v, const OptT& mask,
                         bool is_causal, double scale, double dropout_p) {
    return sdpa_math(q, k, v, opt(mask), is_causal, scale, dropout_p);
  });
}

}  // namespace ember::python
