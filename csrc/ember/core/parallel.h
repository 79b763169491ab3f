// One CPU thread pool for all of ember's kernels. The BLAS is told to use the
// same number of threads and is never called from inside a parallel region,
// so the two never oversubscribe the cores.
#pragma once
#include <cstdint>
#include <functional>

namespace ember {

/// Number of threads kernels use (default: the number of cores).
int get_num_threads();
void set_num_threads(int n);
/// True while running inside a parallel_for body.
bool in_parallel_region();

/// Runs f(begin, end) over [begin, end) split into chunks of at least `grain`
/// elements, on up to get_num_threads() threads. Runs inline when the range is
/// small, when one thread is set, or when already inside a parallel region.
/// The first exception thrown by a chunk is rethrown in the caller.
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& f);

/// Grain for elementwise loops: below this many elements, one thread.
constexpr int64_t kGrainSize = 32768;

/// Hook the BLAS backend sets so set_num_threads reaches it.
void set_blas_threads_hook(void (*hook)(int));

}  // namespace ember
