// Bindings of automatic mixed precision (ops/autocast.h): the thread-local
// autocast state ember.autocast drives, and GradScaler's two fused kernels.
#include "ember/ops/autocast.h"

#include "ember/python/bind.h"

namespace ember::python {

namespace {
DeviceType device_type_arg(const std::string& s) {
  if (s == "cpu") return DeviceType::CPU;
  if (s == "cuda") return DeviceType::CUDA;
  raise(ErrorKind::Runtime, "User specified an unsupported autocast device_type '", s,
        "'; ember supports 'cpu' and 'cuda'");
}
}  // namespace

void init_amp(py::module_& m) {
  namespace ac = autocast;
  m.def("_autocast_is_enabled",
        [](const std::string& d) { return ac::is_enabled(device_type_arg(d)); });
  m.def("_autocast_set_enabled",
        [](const std::string& d, bool on) { ac::set_enabled(device_type_arg(d), on); });
  m.def("_autocast_get_dtype",
        [](const std::string& d) { return dtype_object(ac::get_dtype(device_type_arg(d))); });
  m.def("_autocast_set_dtype", [](const std::string& d, py::handle dt) {
    ac::set_dtype(device_type_arg(d), dtype_arg(dt, "autocast"));
  });
  m.def("_autocast_cache_enabled", [] { return ac::state().cache_enabled; });
  m.def("_autocast_set_cache_enabled", [](bool on) { ac::state().cache_enabled = on; });
  m.def("_autocast_increment_nesting", [] { return ++ac::state().nesting; });
  m.def("_autocast_decrement_nesting", [] { return --ac::state().nesting; });
  m.def("_autocast_clear_cache", [] { ac::clear_cache(); });
  m.def("_autocast_cache_size", [] { return ac::cache_size(); });
  m.def("_autocast_category",
        [](const std::string& op) { return int(ac::category_of(op.c_str())); });
  m.def("_autocast_policy", [] {
    py::list rows;
    for (const auto& [op, c] : ac::policy_rows()) rows.append(py::make_tuple(op, int(c)));
    return rows;
  });
  m.def(
      "_amp_foreach_non_finite_check_and_unscale_",
      [](py::handle grads, const Tensor& found_inf, const Tensor& inv_scale) {
        ac::amp_foreach_non_finite_check_and_unscale_(
            tensor_list_arg(grads, "_amp_foreach_non_finite_check_and_unscale_", "self"), found_inf,
            inv_scale);
      },
      py::arg("self"), py::arg("found_inf"), py::arg("inv_scale"));
  m.def(
      "_amp_update_scale_",
      [](Tensor scale, const Tensor& growth_tracker, const Tensor& found_inf, double growth_factor,
         double backoff_factor, int64_t growth_interval) {
        return ac::amp_update_scale_(scale, growth_tracker, found_inf, growth_factor,
                                     backoff_factor, growth_interval);
      },
      py::arg("self"), py::arg("growth_tracker"), py::arg("found_inf"),
      py::arg("scale_growth_factor"), py::arg("scale_backoff_factor"), py::arg("growth_interval"));
}

}  // namespace ember::python
