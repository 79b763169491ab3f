// Tensor::str(): Python's repr of a tensor, for the C++ API's operator<< (the rules of
// python/ember/_tensor_str.py with its default print options: precision 4, threshold
// 1000, edgeitems 3, linewidth 80).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ember/autograd/node.h"
#include "ember/core/scalar.h"
#include "ember/core/trace_state.h"
#include "ember/kernels/dispatch.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember {
namespace {

constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdge = 3;
constexpr int kLinewidth = 80;

// A shown element: a number, or the "..." of a summarized dimension.
struct Elem {
  double d = 0;
  int64_t i = 0;
  bool b = false;
  bool elided = false;
};

struct Shown {  // nested values, row-major, with elided markers
  std::vector<Elem> flat;
  std::vector<Shown> rows;
  bool leaf = true;
};

Elem read(const Tensor& c, int64_t offset_elems) {
  Elem e;
  dispatch_all(c.dtype(), "print", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = reinterpret_cast<const T*>(c.data_ptr())[offset_elems];
    if constexpr (std::is_same<T, bool>::value)
      e.b = v;
    else if constexpr (std::is_integral<T>::value)
      e.i = int64_t(v);
    else
      e.d = double(float(v));
    if constexpr (std::is_same<T, double>::value) e.d = v;
  });
  return e;
}

Shown shown(const Tensor& t, bool summarize) {
  Shown s;
  if (t.dim() == 0) {
    s.flat.push_back(read(t, 0));
    return s;
  }
  int64_t n = t.size(0);
  bool cut = summarize && n > 2 * kEdge;
  if (t.dim() == 1) {
    for (int64_t i = 0; i < n; ++i) {
      if (cut && i == kEdge) {
        Elem e;
        e.elided = true;
        s.flat.push_back(e);
        i = n - kEdge - 1;
        continue;
      }
      s.flat.push_back(read(t, i * t.stride(0)));
    }
    return s;
  }
  s.leaf = false;
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == kEdge) {
      Shown e;
      e.flat.push_back(Elem{0, 0, false, true});
      s.rows.push_back(e);
      i = n - kEdge - 1;
      continue;
    }
    s.rows.push_back(shown(select(t, 0, i), summarize));
  }
  return s;
}

void flatten_values(const Shown& s, std::vector<Elem>& out) {
  if (s.leaf) {
    for (const Elem& e : s.flat)
      if (!e.elided) out.push_back(e);
    return;
  }
  for (const Shown& r : s.rows) flatten_values(r, out);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, kPrecision, v);
  return buf;
}
std::string fmt0(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}
std::string special(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

struct Formatter {
  bool floating, is_bool;
  bool int_mode = true, sci_mode = false;
  size_t width = 1;

  std::string raw(const Elem& e) const {
    if (is_bool) return e.b ? "True" : "False";
    if (!floating) return std::to_string(e.i);
    double v = e.d;
    if (!std::isfinite(v)) return special(v);
    if (sci_mode) return fmt("%.*e", v);
    if (int_mode) return fmt0(v) + ".";
    return fmt("%.*f", v);
  }

  Formatter(const std::vector<Elem>& vals, bool fl, bool bl) : floating(fl), is_bool(bl) {
    if (!floating) {
      for (const Elem& e : vals) width = std::max(width, raw(e).size());
      return;
    }
    std::vector<double> finite;
    for (const Elem& e : vals)
      if (e.d != 0 && std::isfinite(e.d)) finite.push_back(e.d);
    if (finite.empty()) return;  // zeros, nans, infs: integer mode, width 1 (as Python)
    double lo = std::abs(finite[0]), hi = lo;
    for (double v : finite) {
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
    }
    for (double v : finite) int_mode &= (v == std::ceil(v));
    if (int_mode) {
      sci_mode = hi / lo > 1000.0 || hi > 1.0e8;
    } else {
      sci_mode = hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4;
    }
    width = 1;
    for (double v : finite) width = std::max(width, raw(Elem{v}).size());
  }

  std::string format(const Elem& e) const {
    std::string s = raw(e);
    return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
  }
};

std::string vector_str(const std::vector<Elem>& vals, int indent, const Formatter& f) {
  size_t elem_len = f.width + 2;
  size_t per_line = std::max<size_t>(1, size_t((kLinewidth - indent) / int(elem_len)));
  std::vector<std::string> data;
  for (const Elem& e : vals) data.push_back(e.elided ? " ..." : f.format(e));
  std::string out = "[";
  for (size_t i = 0; i < data.size(); ++i) {
    if (i) out += (i % per_line == 0) ? ",\n" + std::string(size_t(indent + 1), ' ') : ", ";
    out += data[i];
  }
  return out + "]";
}

std::string nested_str(const Shown& s, int64_t dim, int indent, const Formatter& f) {
  if (dim == 0) return f.format(s.flat.at(0));
  if (dim == 1) return vector_str(s.flat, indent, f);
  std::string sep = "," + std::string(size_t(dim - 1), '\n') + std::string(size_t(indent + 1), ' ');
  std::string out = "[";
  for (size_t i = 0; i < s.rows.size(); ++i) {
    if (i) out += sep;
    const Shown& r = s.rows[i];
    bool elided = r.leaf && r.flat.size() == 1 && r.flat[0].elided;
    out += elided ? "..." : nested_str(r, dim - 1, indent + 1, f);
  }
  return out + "]";
}

std::string add_suffixes(const std::string& body, const std::vector<std::string>& suffixes,
                         int indent) {
  std::string out = body;
  size_t nl = body.rfind('\n');
  size_t last = nl == std::string::npos ? body.size() + 1 : body.size() - nl + 1;
  for (const std::string& s : suffixes) {
    if (last + s.size() + 2 > size_t(kLinewidth)) {
      out += ",\n" + std::string(size_t(indent), ' ') + s;
      last = size_t(indent) + s.size();
    } else {
      out += ", " + s;
      last += s.size() + 2;
    }
  }
  return out + ")";
}

std::string shape_tuple(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  if (s.size() == 1) out += ",";
  return out + ")";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "None";
  trace_state::Pause pause;  // printing inside a trace is not part of the program
  const std::string prefix = "tensor(";
  const int indent = int(prefix.size());
  std::vector<std::string> suffixes;
  if (!device().is_cpu()) suffixes.push_back("device='" + device().str() + "'");
  std::string body;
  DType dt = dtype();
  if (numel() == 0) {
    if (dim() != 1) suffixes.push_back("size=" + shape_tuple(sizes()));
    if (dt != default_dtype()) suffixes.push_back(std::string("dtype=ember.") + dtype_name(dt));
    body = "[]";
  } else {
    if (dt != default_dtype() && dt != DType::Int64 && dt != DType::Bool)
      suffixes.push_back(std::string("dtype=ember.") + dtype_name(dt));
    Tensor c = device().is_cpu() ? *this : to_device(*this, Device());
    Shown s = shown(c, numel() > kThreshold);
    std::vector<Elem> vals;
    flatten_values(s, vals);
    Formatter f(vals, is_floating(dt), dt == DType::Bool);
    body = nested_str(s, dim(), indent, f);
  }
  if (auto fn = autograd::grad_fn(*this))
    suffixes.push_back("grad_fn=<" + fn->name() + ">");
  else if (autograd::requires_grad(*this))
    suffixes.push_back("requires_grad=True");
  return add_suffixes(prefix + body, suffixes, indent);
}

}  // namespace ember
