// einsum and the other contraction composites (tensordot, kron, inner, cross,
// matrix_power). Every contraction ends in one bmm through the BLAS.
#include <algorithm>
#include <map>

#include "ember/jit/trace_hook.h"
#include "ember/ops/factory.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "ember/ops/surface.h"
#include "ember/ops/view.h"

namespace ember {
namespace {

// One operand with one label per dim (labels are ints: letters, then ellipsis dims).
struct Term {
  Tensor t;
  std::vector<int> labels;
};

// Ellipsis dims get labels 1000 + k, k counted from the right edge of the broadcast
// ellipsis, so that operands with fewer ellipsis dims line up to the right.
constexpr int kEllipsis = 1000;

std::vector<int> parse_term(const std::string& s, int64_t ndim, int64_t& max_ell, bool& has_ell,
                            const std::string& eq) {
  std::vector<int> letters_before, letters_after;
  bool ell = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == ' ') continue;
    if (c == '.') {
      EMBER_CHECK(!ell && i + 2 < s.size() + 0 + 2 && s.compare(i, 3, "...") == 0,
                  "einsum(): found '.' for operand that is not part of any ellipsis in \"", eq,
                  "\"");
      ell = true;
      i += 2;
      continue;
    }
    EMBER_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'),
                "einsum(): invalid subscript given at index ", i,
                " in the equation string, subscripts must be in [a-zA-Z]");
    (ell ? letters_after : letters_before).push_back(int(c));
  }
  has_ell = ell;
  int64_t named = int64_t(letters_before.size() + letters_after.size());
  std::vector<int> out = letters_before;
  if (ell) {
    EMBER_CHECK(ndim >= named, "einsum(): the number of subscripts in the equation (", named,
                ") is more than the number of dimensions (", ndim, ") for operand");
    int64_t ne = ndim - named;
    max_ell = std::max(max_ell, ne);
    for (int64_t k = ne - 1; k >= 0; --k) out.push_back(kEllipsis + int(k));
  } else {
    EMBER_CHECK(ndim == named, "einsum(): the number of subscripts in the equation (", named,
                ") does not match the number of dimensions (", ndim, ") for operand ",
                "and no ellipsis was given");
  }
  for (int v : letters_after) out.push_back(v);
  return out;
}

// Takes diagonals for labels repeated within one operand.
void take_diagonals(Term& term) {
  for (size_t i = 0; i < term.labels.size(); ++i)
    for (size_t j = i + 1; j < term.labels.size(); ++j)
      if (term.labels[i] == term.labels[j]) {
        EMBER_CHECK(term.t.sizes()[i] == term.t.sizes()[j], "einsum(): subscript ",
                    char(term.labels[i]), " is repeated for operand but the sizes don't match, ",
                    term.t.sizes()[i], " != ", term.t.sizes()[j]);
        // diagonal puts the shared dim last; move it back to i.
        Tensor d = diagonal(term.t, 0, int64_t(i), int64_t(j));
        d = movedim(d, Shape{-1}, Shape{int64_t(i)});
        term.t = d;
        term.labels.erase(term.labels.begin() + int64_t(j));
        --j;
      }
}

// Sums dims whose labels are not in `keep`.
void sum_unneeded(Term& term, const std::vector<int>& keep) {
  Shape dims;
  std::vector<int> labels;
  for (size_t i = 0; i < term.labels.size(); ++i) {
    if (std::find(keep.begin(), keep.end(), term.labels[i]) == keep.end())
      dims.push_back(int64_t(i));
    else
      labels.push_back(term.labels[i]);
  }
  if (!dims.empty()) term.t = sum(term.t, dims, false);
  term.labels = labels;
}

int64_t label_size(const Term& t, int label) {
  for (size_t i = 0; i < t.labels.size(); ++i)
    if (t.labels[i] == label) return t.t.sizes()[i];
  return -1;
}

Term permute_to(const Term& t, const std::vector<int>& order) {
  Shape perm;
  for (int l : order)
    perm.push_back(int64_t(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin()));
  return {permute(t.t, perm), order};
}

// Contracts a and b; `needed` lists labels used later (other operands or the output).
Term contract(Term a, Term b, const std::vector<int>& needed) {
  auto in = [](const std::vector<int>& v, int l) {
    return std::find(v.begin(), v.end(), l) != v.end();
  };
  // A size-1 dim broadcasting against a larger one is dropped from its side.
  for (size_t i = 0; i < a.labels.size(); ++i) {
    int64_t sb = label_size(b, a.labels[i]);
    if (sb > 1 && a.t.sizes()[i] == 1) {
      a.t = squeeze(a.t, Shape{int64_t(i)});
      a.labels.erase(a.labels.begin() + int64_t(i));
      --i;
    }
  }
  for (size_t i = 0; i < b.labels.size(); ++i) {
    int64_t sa = label_size(a, b.labels[i]);
    if (sa > 1 && b.t.sizes()[i] == 1) {
      b.t = squeeze(b.t, Shape{int64_t(i)});
      b.labels.erase(b.labels.begin() + int64_t(i));
      --i;
    }
  }
  std::vector<int> keep_a, keep_b;
  for (int l : a.labels)
    if (in(needed, l) || in(b.labels, l)) keep_a.push_back(l);
  for (int l : b.labels)
    if (in(needed, l) || in(a.labels, l)) keep_b.push_back(l);
  sum_unneeded(a, keep_a);
  sum_unneeded(b, keep_b);
  std::vector<int> batch, contr, aonly, bonly;
  for (int l : a.labels) {
    if (in(b.labels, l))
      (in(needed, l) ? batch : contr).push_back(l);
    else
      aonly.push_back(l);
  }
  for (int l : b.labels)
    if (!in(a.labels, l)) bonly.push_back(l);
  for (int l : batch)
    EMBER_CHECK(label_size(a, l) == label_size(b, l),
                "einsum(): operands do not broadcast with remapped shapes (original->remapped)");
  for (int l : contr)
    EMBER_CHECK(label_size(a, l) == label_size(b, l),
                "einsum(): operands do not broadcast with remapped shapes (original->remapped)");
  auto prod = [](const Term& t, const std::vector<int>& ls) {
    int64_t p = 1;
    for (int l : ls) p = checked_mul(p, label_size(t, l), "einsum");
    return p;
  };
  std::vector<int> oa = batch, ob = batch;
  oa.insert(oa.end(), aonly.begin(), aonly.end());
  oa.insert(oa.end(), contr.begin(), contr.end());
  ob.insert(ob.end(), contr.begin(), contr.end());
  ob.insert(ob.end(), bonly.begin(), bonly.end());
  Term pa = permute_to(a, oa), pb = permute_to(b, ob);
  int64_t nb = prod(a, batch), m = prod(a, aonly), k = prod(a, contr), n = prod(b, bonly);
  DType dt = promote_types(a.t.dtype(), b.t.dtype());
  Tensor ma = reshape(pa.t.dtype() == dt ? pa.t : to_dtype(pa.t, dt), Shape{nb, m, k});
  Tensor mb = reshape(pb.t.dtype() == dt ? pb.t : to_dtype(pb.t, dt), Shape{nb, k, n});
  Tensor r = bmm(ma, mb);
  Shape out_shape;
  std::vector<int> labels;
  for (int l : batch) out_shape.push_back(label_size(a, l)), labels.push_back(l);
  for (int l : aonly) out_shape.push_back(label_size(a, l)), labels.push_back(l);
  for (int l : bonly) out_shape.push_back(label_size(b, l)), labels.push_back(l);
  return {reshape(r, out_shape), labels};
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  EMBER_TRACE("aten::einsum(str equation, Tensor[] operands) -> Tensor", einsum, equation,
              operands);
  EMBER_CHECK(!operands.empty(), "einsum(): must provide at least one operand");
  std::string lhs = equation, rhs;
  size_t arrow = equation.find("->");
  bool explicit_out = arrow != std::string::npos;
  if (explicit_out) {
    lhs = equation.substr(0, arrow);
    rhs = equation.substr(arrow + 2);
  }
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t i = 0; i <= lhs.size(); ++i)
    if (i == lhs.size() || lhs[i] == ',') {
      terms.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  EMBER_CHECK(terms.size() == operands.size(),
              "einsum(): more operands were provided than specified in the equation", " (",
              operands.size(), " operands, ", terms.size(), " terms)");
  int64_t max_ell = 0;
  std::vector<Term> ts;
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    bool has_ell = false;
    Term t{operands[i], parse_term(terms[i], operands[i].dim(), max_ell, has_ell, equation)};
    for (int l : t.labels) count[l]++;
    ts.push_back(t);
  }
  // The output labels.
  std::vector<int> out;
  if (explicit_out) {
    int64_t dummy = 0;
    bool has_ell = false;
    std::vector<int> letters;
    // Parse rhs letters; ellipsis expands to the broadcast ellipsis dims.
    for (size_t i = 0; i < rhs.size(); ++i) {
      char c = rhs[i];
      if (c == ' ') continue;
      if (c == '.') {
        EMBER_CHECK(rhs.compare(i, 3, "...") == 0 && !has_ell,
                    "einsum(): found '.' for output that is not part of any ellipsis");
        has_ell = true;
        for (int64_t k = max_ell - 1; k >= 0; --k) out.push_back(kEllipsis + int(k));
        i += 2;
        continue;
      }
      EMBER_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'),
                  "einsum(): invalid subscript given at index ", i,
                  " in the equation string, subscripts must be in [a-zA-Z]");
      EMBER_CHECK(count.count(int(c)), "einsum(): output subscript ", c,
                  " does not appear in the equation for any input operand");
      EMBER_CHECK(std::find(out.begin(), out.end(), int(c)) == out.end(),
                  "einsum(): output subscript ", c, " appears more than once in the output");
      out.push_back(int(c));
    }
    (void)dummy;
    if (!has_ell)
      for (int64_t k = max_ell - 1; k >= 0; --k)
        EMBER_CHECK(false, "einsum(): ellipsis dims in the inputs but no ellipsis in the output");
  } else {
    for (int64_t k = max_ell - 1; k >= 0; --k) out.push_back(kEllipsis + int(k));
    for (auto& [l, c] : count)
      if (l < kEllipsis && c == 1) out.push_back(l);
    // Letters in alphabetical order, upper case first (as ASCII, like PyTorch).
  }
  for (Term& t : ts) take_diagonals(t);
  // Size-1 broadcasting of ellipsis/batch dims is resolved pairwise in contract.
  Term acc = ts[0];
  for (size_t i = 1; i < ts.size(); ++i) {
    std::vector<int> needed = out;
    for (size_t j = i + 1; j < ts.size(); ++j)
      needed.insert(needed.end(), ts[j].labels.begin(), ts[j].labels.end());
    acc = contract(acc, ts[i], needed);
  }
  sum_unneeded(acc, out);
  // Output labels missing from acc (size-1 ellipsis dims dropped by broadcasting) come back as
  // size 1.
  Shape final_shape;
  std::vector<int> present;
  for (int l : out) {
    if (std::find(acc.labels.begin(), acc.labels.end(), l) != acc.labels.end())
      present.push_back(l);
  }
  Term p = permute_to(acc, present);
  for (int l : out) {
    int64_t s = label_size(p, l);
    final_shape.push_back(s < 0 ? 1 : s);
  }
  Tensor r = p.t;
  if (r.sizes() != final_shape) r = reshape(r, final_shape);
  return r;
}

Tensor tensordot(const Tensor& a, const Tensor& b, const Shape& dims_a, const Shape& dims_b) {
  EMBER_TRACE(
      "aten::tensordot.Tensor_intList_intList(Tensor self, Tensor b, int[] dims_a, int[] dims_b) "
      "-> Tensor",
      tensordot, a, b, dims_a, dims_b);
  EMBER_CHECK(dims_a.size() == dims_b.size(), "both dimension lists should have same length");
  Shape pa, pb, out_shape;
  std::vector<bool> used_a(a.dim(), false), used_b(b.dim(), false);
  int64_t k = 1;
  for (size_t i = 0; i < dims_a.size(); ++i) {
    int64_t da = wrap_dim(dims_a[i], a.dim()), db = wrap_dim(dims_b[i], b.dim());
    EMBER_CHECK(a.sizes()[da] == b.sizes()[db],
                "contracted dimensions need to match, but first has size ", a.sizes()[da],
                " in dim ", da, " and second has size ", b.sizes()[db], " in dim ", db);
    used_a[da] = used_b[db] = true;
    k *= a.sizes()[da];
  }
  Shape free_a, free_b;
  int64_t m = 1, n = 1;
  for (int64_t i = 0; i < a.dim(); ++i)
    if (!used_a[i]) free_a.push_back(i), out_shape.push_back(a.sizes()[i]), m *= a.sizes()[i];
  for (int64_t i = 0; i < b.dim(); ++i)
    if (!used_b[i]) free_b.push_back(i), out_shape.push_back(b.sizes()[i]), n *= b.sizes()[i];
  pa = free_a;
  for (int64_t d : dims_a) pa.push_back(wrap_dim(d, a.dim()));
  for (int64_t d : dims_b) pb.push_back(wrap_dim(d, b.dim()));
  for (int64_t d : free_b) pb.push_back(d);
  EMBER_CHECK(a.dtype() == b.dtype(), "expected both tensors to have the same dtype, but got ",
              dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  Tensor r = mm(reshape(permute(a, pa), Shape{m, k}), reshape(permute(b, pb), Shape{k, n}));
  return reshape(r, out_shape);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims) {
  EMBER_TRACE("aten::tensordot.Tensor_int(Tensor self, Tensor b, int dim) -> Tensor", tensordot, a,
              b, dims);
  EMBER_CHECK(dims >= 0, "tensordot expects dims >= 0, but got dims=", dims);
  EMBER_CHECK(dims <= a.dim() && dims <= b.dim(),
              "tensordot expects dims < ndim_a or ndim_b, but got dims=", dims);
  Shape da, db;
  for (int64_t i = 0; i < dims; ++i) {
    da.push_back(a.dim() - dims + i);
    db.push_back(i);
  }
  return tensordot(a, b, da, db);
}

Tensor kron(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::kron(Tensor self, Tensor b) -> Tensor", kron, a, b);
  int64_t nd = std::max(a.dim(), b.dim());
  Shape sa(static_cast<size_t>(nd), 1), sb(static_cast<size_t>(nd), 1);
  for (int64_t i = 0; i < a.dim(); ++i) sa[nd - a.dim() + i] = a.sizes()[i];
  for (int64_t i = 0; i < b.dim(); ++i) sb[nd - b.dim() + i] = b.sizes()[i];
  // a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...): the product interleaves.
  Shape ia, ib, out;
  for (int64_t i = 0; i < nd; ++i) {
    ia.push_back(sa[i]);
    ia.push_back(1);
    ib.push_back(1);
    ib.push_back(sb[i]);
    out.push_back(checked_mul(sa[i], sb[i], "kron"));
  }
  return reshape(binary(BinaryOp::mul, reshape(a, ia), reshape(b, ib)), out);
}

Tensor inner(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::inner(Tensor self, Tensor b) -> Tensor", inner, a, b);
  if (a.dim() == 0 || b.dim() == 0) return binary(BinaryOp::mul, a, b);
  EMBER_CHECK(a.sizes().back() == b.sizes().back(),
              "inner() the last dimension must match on both input tensors but got shapes ",
              shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  return tensordot(a, b, Shape{-1}, Shape{-1});
}

Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim) {
  EMBER_TRACE("aten::cross(Tensor self, Tensor b, int? dim) -> Tensor", cross, a, b, dim);
  EMBER_CHECK(a.dim() == b.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  std::vector<Tensor> bt = broadcast_tensors({a, b});
  const Tensor &x = bt[0], &y = bt[1];
  int64_t d;
  if (dim) {
    d = wrap_dim(*dim, x.dim());
  } else {
    d = -1;
    for (int64_t i = 0; i < x.dim(); ++i)
      if (x.sizes()[i] == 3) {
        d = i;
        break;
      }
    EMBER_CHECK(d >= 0, "no dimension of size 3 in input");
  }
  EMBER_CHECK(x.sizes()[d] == 3, "linalg.cross: inputs dimension ", d, " must have length 3. Got ",
              a.sizes()[d], " and ", b.sizes()[d]);
  auto c = [&](const Tensor& t, int64_t i) { return narrow(t, d, i, 1); };
  using B = BinaryOp;
  auto f = [&](int64_t i, int64_t j) {
    return binary(B::sub, binary(B::mul, c(x, i), c(y, j)), binary(B::mul, c(x, j), c(y, i)));
  };
  return cat({f(1, 2), f(2, 0), f(0, 1)}, d);
}

Tensor matrix_power(const Tensor& a, int64_t n) {
  EMBER_TRACE("aten::matrix_power(Tensor self, int n) -> Tensor", matrix_power, a, n);
  EMBER_CHECK(a.dim() >= 2 && a.sizes()[a.dim() - 1] == a.sizes()[a.dim() - 2],
              "linalg.matrix_power: A must be batches of square matrices, but they are ",
              a.dim() >= 2 ? a.sizes()[a.dim() - 2] : 0, " by ",
              a.dim() >= 1 ? a.sizes().back() : 0, " matrices");
  EMBER_CHECK(n >= 0,
              "linalg.matrix_power: negative powers need an inverse, which ember computes through ",
              "ember.linalg.inv; use matrix_power(linalg.inv(A), -n)");
  int64_t k = a.sizes().back();
  if (n == 0) return contiguous(expand(eye(k, std::nullopt, a.dtype(), a.device()), a.sizes()));
  Tensor result, base = a;
  while (n > 0) {
    if (n & 1) result = result.defined() ? matmul(result, base) : base;
    n >>= 1;
    if (n) base = matmul(base, base);
  }
  return result;
}

}  // namespace ember
