// Ops on numbers, bools, lists and tensor metadata that graphs need besides the tensor
// front-ends: sizes, Python's int/float arithmetic and comparisons, list building and
// indexing, conversions between tensors and numbers (registered here, not at a
// front-end: they have none).
#include <cmath>

#include "ember/jit/boxing.h"
#include "ember/jit/operator.h"
#include "ember/ops/ops.h"
#include "ember/ops/surface.h"

namespace ember::jit {
namespace {

template <typename... A, typename F>
BoxedFn boxed(F f) {
  return [f](Stack& s) { call_unboxed(s, TypeList<A...>{}, f); };
}

int64_t floordiv(int64_t a, int64_t b) {
  EMBER_CHECK_KIND(ErrorKind::Runtime, b != 0, "ZeroDivisionError: integer division by zero");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t pymod(int64_t a, int64_t b) {
  EMBER_CHECK_KIND(ErrorKind::Runtime, b != 0, "ZeroDivisionError: integer modulo by zero");
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
double pyfmod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

IValue list_get(const IValue& l, int64_t i) {
  const auto& items = l.toListRef();
  int64_t n = int64_t(items.size());
  int64_t j = i < 0 ? i + n : i;
  EMBER_CHECK_INDEX(j >= 0 && j < n, "list index out of range");
  return items[size_t(j)];
}

struct Registrar {
  Registrar() {
    using T = Tensor;
    // ---- tensor metadata ----
    register_operator("aten::size.int(Tensor self, int dim) -> int",
                      boxed<T, int64_t>([](const T& t, int64_t d) { return t.size(d); }));
    register_operator("aten::size(Tensor self) -> int[]",
                      boxed<T>([](const T& t) { return Shape(t.sizes()); }));
    register_operator("aten::dim(Tensor self) -> int",
                      boxed<T>([](const T& t) { return t.dim(); }));
    register_operator("aten::numel(Tensor self) -> int",
                      boxed<T>([](const T& t) { return t.numel(); }));
    register_operator("aten::len.Tensor(Tensor t) -> int", boxed<T>([](const T& t) {
                        EMBER_CHECK_TYPE(t.dim() > 0, "len() of a 0-d tensor");
                        return t.size(0);
                      }));
    register_operator("prim::dtype(Tensor a) -> ScalarType", [](Stack& s) {
      DType d = s.back().toTensor().dtype();
      s.back() = IValue(d);
    });
    register_operator("prim::device(Tensor a) -> Device", [](Stack& s) {
      Device d = s.back().toTensor().device();
      s.back() = IValue(d);
    });
    register_operator("prim::is_floating_point(Tensor a) -> bool",
                      boxed<T>([](const T& t) { return is_floating(t.dtype()); }));
    register_operator("prim::requires_grad(Tensor a) -> bool",
                      boxed<T>([](const T& t) { return t.requires_grad(); }));
    // ---- tensor <-> number ----
    register_operator("aten::Bool.Tensor(Tensor a) -> bool",
                      boxed<T>([](const T& t) { return is_nonzero(t); }));
    register_operator("aten::Int.Tensor(Tensor a) -> int",
                      boxed<T>([](const T& t) { return t.item().to_int(); }));
    register_operator("aten::Float.Tensor(Tensor a) -> float",
                      boxed<T>([](const T& t) { return t.item().to_double(); }));
    register_operator("aten::item(Tensor self) -> Scalar", [](Stack& s) {
      Scalar v = s.back().toTensor().item();
      s.back() = IValue(v);
    });
    register_operator("aten::Int.float(float a) -> int",
                      boxed<double>([](double a) { return int64_t(a); }));
    register_operator("aten::Float.int(int a) -> float",
                      boxed<int64_t>([](int64_t a) { return double(a); }));
    register_operator("aten::Int.bool(bool a) -> int",
                      boxed<bool>([](bool a) { return int64_t(a); }));
    register_operator("aten::Bool.int(int a) -> bool",
                      boxed<int64_t>([](int64_t a) { return a != 0; }));
    register_operator("aten::Bool.float(float a) -> bool",
                      boxed<double>([](double a) { return a != 0; }));
    register_operator(
        "prim::NumToTensor.Scalar(Scalar a) -> Tensor",
        boxed<Scalar>([](const Scalar& a) { return scalar_tensor(a, a.wrapped_dtype()); }));

    // ---- int arithmetic (Python semantics: floor division, sign of the divisor) ----
    using I = int64_t;
    register_operator("aten::add.int(int a, int b) -> int",
                      boxed<I, I>([](I a, I b) { return a + b; }));
    register_operator("aten::sub.int(int a, int b) -> int",
                      boxed<I, I>([](I a, I b) { return a - b; }));
    register_operator("aten::mul.int(int a, int b) -> int",
                      boxed<I, I>([](I a, I b) { return a * b; }));
    register_operator("aten::floordiv.int(int a, int b) -> int", boxed<I, I>(floordiv));
    register_operator("aten::remainder.int(int a, int b) -> int", boxed<I, I>(pymod));
    register_operator("aten::div.int(int a, int b) -> float", boxed<I, I>([](I a, I b) {
                        EMBER_CHECK(b != 0, "ZeroDivisionError: division by zero");
                        return double(a) / double(b);
                      }));
    register_operator("aten::neg.int(int a) -> int", boxed<I>([](I a) { return -a; }));
    register_operator("aten::pow.int(int a, int b) -> float",
                      boxed<I, I>([](I a, I b) { return std::pow(double(a), double(b)); }));
    register_operator("aten::min.int(int a, int b) -> int",
                      boxed<I, I>([](I a, I b) { return std::min(a, b); }));
    register_operator("aten::max.int(int a, int b) -> int",
                      boxed<I, I>([](I a, I b) { return std::max(a, b); }));
    register_operator("aten::abs.int(int a) -> int", boxed<I>([](I a) { return a < 0 ? -a : a; }));
#define EMBER_CMP(name, op)                                            \
  register_operator("aten::" #name ".int(int a, int b) -> bool",       \
                    boxed<I, I>([](I a, I b) { return a op b; }));     \
  register_operator("aten::" #name ".float(float a, float b) -> bool", \
                    boxed<double, double>([](double a, double b) { return a op b; }));
    EMBER_CMP(eq, ==)
    EMBER_CMP(ne, !=)
    EMBER_CMP(lt, <)
    EMBER_CMP(le, <=)
    EMBER_CMP(gt, >)
    EMBER_CMP(ge, >=)
#undef EMBER_CMP
    using D = double;
    register_operator("aten::add.float(float a, float b) -> float",
                      boxed<D, D>([](D a, D b) { return a + b; }));
    register_operator("aten::sub.float(float a, float b) -> float",
                      boxed<D, D>([](D a, D b) { return a - b; }));
    register_operator("aten::mul.float(float a, float b) -> float",
                      boxed<D, D>([](D a, D b) { return a * b; }));
    register_operator("aten::div.float(float a, float b) -> float", boxed<D, D>([](D a, D b) {
                        EMBER_CHECK(b != 0, "ZeroDivisionError: float division by zero");
                        return a / b;
                      }));
    register_operator("aten::floordiv.float(float a, float b) -> float",
                      boxed<D, D>([](D a, D b) { return std::floor(a / b); }));
    register_operator("aten::remainder.float(float a, float b) -> float", boxed<D, D>(pyfmod));
    register_operator("aten::pow.float(float a, float b) -> float",
                      boxed<D, D>([](D a, D b) { return std::pow(a, b); }));
    register_operator("aten::neg.float(float a) -> float", boxed<D>([](D a) { return -a; }));
    register_operator("aten::sqrt.float(float a) -> float",
                      boxed<D>([](D a) { return std::sqrt(a); }));
    register_operator("aten::min.float(float a, float b) -> float",
                      boxed<D, D>([](D a, D b) { return std::min(a, b); }));
    register_operator("aten::max.float(float a, float b) -> float",
                      boxed<D, D>([](D a, D b) { return std::max(a, b); }));
    // ---- bool ----
    using B = bool;
    register_operator("aten::__not__(bool self) -> bool", boxed<B>([](B a) { return !a; }));
    register_operator("aten::__and__.bool(bool a, bool b) -> bool",
                      boxed<B, B>([](B a, B b) { return a && b; }));
    register_operator("aten::__or__.bool(bool a, bool b) -> bool",
                      boxed<B, B>([](B a, B b) { return a || b; }));
    register_operator("aten::eq.bool(bool a, bool b) -> bool",
                      boxed<B, B>([](B a, B b) { return a == b; }));
    register_operator("aten::ne.bool(bool a, bool b) -> bool",
                      boxed<B, B>([](B a, B b) { return a != b; }));
    register_operator("aten::eq.str(str a, str b) -> bool",
                      boxed<std::string, std::string>(
                          [](const std::string& a, const std::string& b) { return a == b; }));
    register_operator("aten::ne.str(str a, str b) -> bool",
                      boxed<std::string, std::string>(
                          [](const std::string& a, const std::string& b) { return a != b; }));
    // `x is None` / `x is not None` on optionals.
    register_operator("aten::__is__(t self, t obj) -> bool", [](Stack& s) {
      IValue b = std::move(s.back());
      s.pop_back();
      IValue a = std::move(s.back());
      s.back() = IValue(a.is_none() ? b.is_none() : (b.is_none() ? false : a.same_constant(b)));
    });
    register_operator("aten::__isnot__(t self, t obj) -> bool", [](Stack& s) {
      IValue b = std::move(s.back());
      s.pop_back();
      IValue a = std::move(s.back());
      s.back() = IValue(!(a.is_none() ? b.is_none() : (b.is_none() ? false : a.same_constant(b))));
    });

    // ---- lists ----
    register_operator("aten::len.t(t[] a) -> int", [](Stack& s) {
      int64_t n = int64_t(s.back().toListRef().size());
      s.back() = IValue(n);
    });
    register_operator("aten::__getitem__.t(t[] list, int idx) -> t", [](Stack& s) {
      int64_t i = s.back().toInt();
      s.pop_back();
      IValue v = list_get(s.back(), i);
      s.back() = std::move(v);
    });
    register_operator(
        "aten::_set_item.t(t[] l, int idx, t el) -> t[]",
        [](Stack& s) {
          IValue el = std::move(s.back());
          s.pop_back();
          int64_t i = s.back().toInt();
          s.pop_back();
          auto& items = s.back().toList()->items;
          int64_t n = int64_t(items.size());
          int64_t j = i < 0 ? i + n : i;
          EMBER_CHECK_INDEX(j >= 0 && j < n, "list assignment index out of range");
          items[size_t(j)] = std::move(el);
        },
        1, Effect::Mutates);
    register_operator(
        "aten::append.t(t[] self, t el) -> t[]",
        [](Stack& s) {
          IValue el = std::move(s.back());
          s.pop_back();
          s.back().toList()->items.push_back(std::move(el));
        },
        1, Effect::Mutates);
    register_operator(
        "aten::add_.t(t[] self, t[] b) -> t[]",
        [](Stack& s) {
          IValue b = std::move(s.back());
          s.pop_back();
          auto& items = s.back().toList()->items;
          const auto& more = b.toListRef();
          items.insert(items.end(), more.begin(), more.end());
        },
        1, Effect::Mutates);
    register_operator("aten::add.t(t[] a, t[] b) -> t[]", [](Stack& s) {
      IValue b = std::move(s.back());
      s.pop_back();
      const auto& a = s.back().toList();
      std::vector<IValue> items = a->items;
      const auto& more = b.toListRef();
      items.insert(items.end(), more.begin(), more.end());
      s.back() = IValue::list(a->elem, std::move(items));
    });
    register_operator("aten::list.t(t[] l) -> t[]", [](Stack& s) {
      const auto& a = s.back().toList();
      s.back() = IValue::list(a->elem, a->items);
    });
    register_operator("aten::__contains__.int_list(int[] l, int item) -> bool", [](Stack& s) {
      int64_t x = s.back().toInt();
      s.pop_back();
      bool found = false;
      for (const IValue& v : s.back().toListRef()) found |= v.toInt() == x;
      s.back() = IValue(found);
    });
    register_operator("aten::slice.t(t[] l, int? start=None, int? end=None, int step=1) -> t[]",
                      [](Stack& s) {
                        int64_t step = s.back().toInt();
                        s.pop_back();
                        IValue end = std::move(s.back());
                        s.pop_back();
                        IValue start = std::move(s.back());
                        s.pop_back();
                        const auto& l = s.back().toList();
                        int64_t n = int64_t(l->items.size());
                        EMBER_CHECK_VALUE(step > 0, "slice step must be positive");
                        auto clampi = [&](const IValue& v, int64_t dflt) {
                          if (v.is_none()) return dflt;
                          int64_t i = v.toInt();
                          if (i < 0) i += n;
                          return std::min(std::max(i, int64_t(0)), n);
                        };
                        int64_t b = clampi(start, 0), e = clampi(end, n);
                        std::vector<IValue> items;
                        for (int64_t i = b; i < e; i += step) items.push_back(l->items[size_t(i)]);
                        s.back() = IValue::list(l->elem, std::move(items));
                      });
    register_operator("prim::min.int_list(int[] l) -> int", [](Stack& s) {
      const auto& l = s.back().toListRef();
      EMBER_CHECK_VALUE(!l.empty(), "min() arg is an empty sequence");
      int64_t m = l[0].toInt();
      for (const IValue& v : l) m = std::min(m, v.toInt());
      s.back() = IValue(m);
    });
    register_operator("prim::max.int_list(int[] l) -> int", [](Stack& s) {
      const auto& l = s.back().toListRef();
      EMBER_CHECK_VALUE(!l.empty(), "max() arg is an empty sequence");
      int64_t m = l[0].toInt();
      for (const IValue& v : l) m = std::max(m, v.toInt());
      s.back() = IValue(m);
    });
    register_operator("aten::str(t elem) -> str", [](Stack& s) {
      const IValue& v = s.back();
      std::string r = v.is_string() ? v.toStringRef() : v.repr();
      s.back() = IValue(r);
    });
    register_operator(
        "aten::add.str(str a, str b) -> str",
        boxed<std::string, std::string>(
            [](const std::string& a, const std::string& b) { return IValue(a + b); }));
  }
} registrar;

}  // namespace
}  // namespace ember::jit
