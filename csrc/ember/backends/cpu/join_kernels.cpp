// CPU kernel of the index remap behind flip, roll and repeat_interleave
// (see Note [Index remap] in ops/join.h).
#include <cstring>

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/stubs/join.h"

namespace ember::cpu {
namespace {

// Inner dims are merged into one table while it stays this small, so the
// innermost loop is long even for shapes like [100000, 2].
constexpr int64_t kMaxMergedTable = 1 << 16;

// W is an unsigned integer as wide as one element: the kernel only moves bytes.
template <typename W>
void remap_typed(const Tensor& out, const Tensor& in, const RemapTables& tables) {
  W* dst = reinterpret_cast<W*>(out.data_ptr());
  const W* src = reinterpret_cast<const W*>(in.data_ptr());
  if (tables.empty()) {  // 0-d
    dst[0] = src[0];
    return;
  }
  // Merge trailing dims into `inner` while small.
  std::vector<int64_t> inner = tables.back();
  int64_t nd = int64_t(tables.size()) - 1;  // dims [0, nd) stay outer
  while (nd > 0 && int64_t(inner.size()) * int64_t(tables[nd - 1].size()) <= kMaxMergedTable) {
    const std::vector<int64_t>& t = tables[nd - 1];
    std::vector<int64_t> merged;
    merged.reserve(t.size() * inner.size());
    for (int64_t a : t)
      for (int64_t b : inner) merged.push_back(a + b);
    inner.swap(merged);
    --nd;
  }
  const int64_t n = int64_t(inner.size());
  bool linear = true;  // inner reads a contiguous run: one memcpy per row
  for (int64_t j = 1; j < n && linear; ++j) linear = inner[j] == inner[0] + j;
  const int64_t rows = out.numel() / n;
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / n), [&](int64_t r0, int64_t r1) {
    // Multi-index of row r0 over the outer dims, then step it row by row.
    std::vector<int64_t> idx(size_t(nd), 0);
    int64_t rem = r0, base = 0;
    for (int64_t d = nd - 1; d >= 0; --d) {
      int64_t sz = int64_t(tables[d].size());
      idx[d] = rem % sz;
      rem /= sz;
      base += tables[d][idx[d]];
    }
    for (int64_t r = r0; r < r1; ++r) {
      W* o = dst + r * n;
      const W* s = src + base;
      if (linear) {
        std::memcpy(o, s + inner[0], size_t(n) * sizeof(W));
      } else {
        for (int64_t j = 0; j < n; ++j) o[j] = s[inner[j]];
      }
      for (int64_t d = nd - 1; d >= 0; --d) {  // odometer step
        const std::vector<int64_t>& t = tables[d];
        base -= t[idx[d]];
        if (++idx[d] < int64_t(t.size())) {
          base += t[idx[d]];
          break;
        }
        idx[d] = 0;
        base += t[0];
      }
    }
  });
}

void remap_kernel(const Tensor& out, const Tensor& in, const RemapTables& tables) {
  EMBER_CHECK(
      out.is_contiguous() && out.dtype() == in.dtype() && int64_t(tables.size()) == out.dim(),
      "index_remap: internal error: bad operands");
  switch (in.element_size()) {
    case 1:
      return remap_typed<uint8_t>(out, in, tables);
    case 2:
      return remap_typed<uint16_t>(out, in, tables);
    case 4:
      return remap_typed<uint32_t>(out, in, tables);
    case 8:
      return remap_typed<uint64_t>(out, in, tables);
    default:
      EMBER_ERROR("index_remap: unsupported element size ", in.element_size());
  }
}

EMBER_REGISTER_CPU_KERNELS(join) { index_remap_stub.fns[int(DeviceType::CPU)] = &remap_kernel; }

}  // namespace
}  // namespace ember::cpu
