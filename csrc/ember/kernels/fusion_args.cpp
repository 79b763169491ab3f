#include "ember/kernels/fusion_args.h"

#include "ember/core/error.h"

namespace ember {

FusionArgs fusion_args(const std::vector<Tensor>& ts, const std::vector<int64_t>& shape,
                       const std::vector<bool>& scalar, int64_t rows, Device device) {
  EMBER_CHECK(scalar.size() == ts.size(), "ember.compile: ", ts.size(), " operands but ",
              scalar.size(), " scalar flags");
  const size_t nd = shape.size(), nops = ts.size();
  EMBER_CHECK(rows >= 0 && size_t(rows) <= std::max<size_t>(nd, 1),
              "ember.compile: a kernel cannot reduce over ", rows, " of ", nd, " dimensions");
  FusionArgs a;
  a.meta.assign(2 + nd + nops * nd, 0);
  a.meta[1] = int64_t(nd);
  int64_t numel = 1;
  for (size_t d = 0; d < nd; ++d) {
    EMBER_CHECK(shape[d] >= 0, "ember.compile: negative size ", shape[d],
                " in the iteration shape");
    a.meta[2 + d] = shape[d];
    numel *= shape[d];
  }
  a.ptrs.resize(nops);
  bool flat = true;
  for (size_t k = 0; k < nops; ++k) {
    const Tensor& t = ts[k];
    EMBER_CHECK(t.defined(), "ember.compile: operand ", k, " is undefined");
    EMBER_CHECK(t.device() == device, "ember.compile: operand ", k, " is on ", t.device().str(),
                " but the fused kernel runs on ", device.str());
    const size_t td = size_t(t.dim());
    EMBER_CHECK(td <= nd, "ember.compile: operand ", k, " has ", td,
                " dimensions, more than the iteration shape's ", nd);
    int64_t* st = a.meta.data() + 2 + nd + k * nd;
    bool full = t.numel() == numel, contiguous = true;
    int64_t expect = 1;
    for (size_t i = 0; i < nd; ++i) {
      const size_t d = nd - 1 - i;
      if (i >= td) {
        st[d] = 0;
        full = full && shape[d] == 1;
        continue;
      }
      const int64_t sz = t.sizes()[td - 1 - i];
      EMBER_CHECK(sz == shape[d] || sz == 1, "ember.compile: operand ", k, " of size ", sz,
                  " at dimension ", d, " does not broadcast to ", shape[d]);
      st[d] = sz == 1 ? 0 : t.strides()[td - 1 - i];
      if (sz != shape[d]) full = false;
      if (sz != 1 && t.strides()[td - 1 - i] != expect) contiguous = false;
      expect *= shape[d];
    }
    flat = flat && (scalar[k] ? t.numel() == 1 : (full && contiguous));
    a.ptrs[k] = t.numel() == 0 ? nullptr : static_cast<char*>(t.data_ptr());
  }
  a.meta[0] = flat ? 1 : 0;
  a.work = numel;
  if (rows > 0) {  // reduce over the last `rows` dimensions: one work item per row
    a.work = 1;
    for (size_t d = 0; d + size_t(rows) < nd; ++d) a.work *= shape[d];
    if (numel == 0) a.work = 0;
  }
  return a;
}

}  // namespace ember
