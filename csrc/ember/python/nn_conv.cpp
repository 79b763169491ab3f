// Bindings of convolution, pooling, padding and resampling: argument conversion
// only; python/ember/nn/_functional/conv.py normalizes torch's spellings.
#include "ember/ops/nn_conv.h"
#include "ember/backends/cpu/conv_direct.h"
#include "ember/backends/cpu/conv_onednn.h"
#include "ember/ops/nn_pool.h"
#include "ember/ops/nn_resample.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

Shape to_shape(const std::vector<int64_t>& v) { return Shape(v.begin(), v.end()); }

}  // namespace

void init_nn_conv(py::module_& m) {
  // tests compare the direct float32 kernels with im2col + GEMM (Note [Direct convolution])
  m.def(
      "_set_conv_direct_enabled", [](bool on) { cpu::set_conv_direct_enabled(on); },
      py::arg("enabled"));
  m.def("_conv_direct_enabled", [] { return cpu::conv_direct_enabled(); });
  m.def("_conv_direct_calls", [] { return cpu::conv_direct_calls(); });
  // ember.backends.mkldnn.is_available(): oneDNN loaded (Note [oneDNN convolution])
  m.def("_has_mkldnn", [] { return conv_engine_available(DeviceType::CPU); });
  m.def("_onednn_conv_calls", [] { return cpu::onednn_conv_calls(); });
  m.def(
      "_convolution",
      [](const Tensor& input, const Tensor& weight, std::optional<Tensor> bias,
         const std::vector<int64_t>& stride, const std::vector<int64_t>& pad_lo,
         const std::vector<int64_t>& pad_hi, const std::vector<int64_t>& dilation, bool transposed,
         const std::vector<int64_t>& output_padding, int64_t groups, const std::string& op) {
        return convolution(input, weight, bias, to_shape(stride), to_shape(pad_lo),
                           to_shape(pad_hi), to_shape(dilation), transposed,
                           to_shape(output_padding), groups, op);
      },
      py::arg("input"), py::arg("weight"), py::arg("bias"), py::arg("stride"),
      py::arg("padding_lo"), py::arg("padding_hi"), py::arg("dilation"), py::arg("transposed"),
      py::arg("output_padding"), py::arg("groups"), py::arg("op"));
  m.def("_im2col",
        [](const Tensor& input, const std::vector<int64_t>& k, const std::vector<int64_t>& d,
           const std::vector<int64_t>& p, const std::vector<int64_t>& s) {
          return im2col(input, to_shape(k), to_shape(d), to_shape(p), to_shape(s));
        });
  m.def("_col2im", [](const Tensor& input, const std::vector<int64_t>& o,
                      const std::vector<int64_t>& k, const std::vector<int64_t>& d,
                      const std::vector<int64_t>& p, const std::vector<int64_t>& s) {
    return col2im(input, to_shape(o), to_shape(k), to_shape(d), to_shape(p), to_shape(s));
  });
  m.def("_max_pool", [](const Tensor& x, int64_t nsp, const std::vector<int64_t>& k,
                        const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                        const std::vector<int64_t>& d, bool ceil_mode, const std::string& op) {
    return max_pool(x, nsp, to_shape(k), to_shape(s), to_shape(p), to_shape(d), ceil_mode, op);
  });
  m.def("_avg_pool",
        [](const Tensor& x, int64_t nsp, const std::vector<int64_t>& k,
           const std::vector<int64_t>& s, const std::vector<int64_t>& p, bool ceil_mode,
           bool count_include_pad, std::optional<int64_t> divisor_override, const std::string& op) {
          return avg_pool(x, nsp, to_shape(k), to_shape(s), to_shape(p), ceil_mode,
                          count_include_pad, divisor_override, op);
        });
  m.def("_adaptive_avg_pool",
        [](const Tensor& x, int64_t nsp, const std::vector<int64_t>& o, const std::string& op) {
          return adaptive_avg_pool(x, nsp, to_shape(o), op);
        });
  m.def("_adaptive_max_pool",
        [](const Tensor& x, int64_t nsp, const std::vector<int64_t>& o, const std::string& op) {
          return adaptive_max_pool(x, nsp, to_shape(o), op);
        });
  m.def("_max_unpool",
        [](const Tensor& x, const Tensor& idx, int64_t nsp, const std::vector<int64_t>& o,
           const std::string& op) { return max_unpool(x, idx, nsp, to_shape(o), op); });
  m.def("_pad", [](const Tensor& x, const std::vector<int64_t>& p, const std::string& mode,
                   std::optional<double> value) { return pad(x, to_shape(p), mode, value); });
  m.def("_interpolate",
        [](const Tensor& x, const std::vector<int64_t>& size, const std::vector<double>& scales,
           const std::string& mode, bool align_corners) {
          return interpolate(x, to_shape(size), scales, mode, align_corners);
        });
  m.def("_pixel_shuffle", &pixel_shuffle);
  m.def("_pixel_unshuffle", &pixel_unshuffle);
  m.def("_affine_grid", [](const Tensor& theta, const std::vector<int64_t>& size, bool align) {
    return affine_grid(theta, to_shape(size), align);
  });
  m.def("_grid_sample", &grid_sample);
}

}  // namespace ember::python
