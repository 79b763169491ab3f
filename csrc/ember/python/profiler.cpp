// Bindings of the op profiler's recording side (core/profiler.h); ember.profiler
// builds the tables and traces from the events.
#include "ember/core/profiler.h"

#include "ember/python/bind.h"

namespace ember::python {

namespace {
py::list events_to_python(std::vector<profiler::Event> evs) {
  py::list out;
  for (auto& e : evs) {
    py::list shapes;
    for (auto& s : e.shapes) shapes.append(py::cast(s));
    out.append(py::make_tuple(e.name, e.kind, e.tid, e.start_ns, e.end_ns, e.correlation, e.parent,
                              e.depth, shapes, py::cast(e.dtypes), e.self_alloc_bytes,
                              e.self_free_bytes, e.mem_bytes, e.total_allocated));
  }
  return out;
}
}  // namespace

void init_profiler(py::module_& m) {
  m.def(
      "_profiler_start",
      [](bool record_shapes, bool profile_memory, bool device) {
        profiler::Config c;
        c.record_shapes = record_shapes;
        c.profile_memory = profile_memory;
        c.device = device;
        profiler::start(c);
      },
      py::arg("record_shapes") = false, py::arg("profile_memory") = false,
      py::arg("device") = false);
  m.def("_profiler_stop", [] { return events_to_python(profiler::stop()); });
  m.def("_profiler_drain", [] { return events_to_python(profiler::drain()); });
  m.def("_profiler_enabled", [] { return profiler::enabled(); });
  m.def("_profiler_now_ns", [] { return profiler::now_ns(); });
  m.def("_record_function_enter", [](const std::string& name) {
    return profiler::enter(name, profiler::EventKind::UserScope);
  });
  m.def("_record_function_exit", [](int64_t handle) { profiler::exit(handle); });
}

}  // namespace ember::python
