// Times forward of an ember.jit archive from C++ (benchmarks/bench_jit.py): prints the median
// seconds per call of `bench_jit_mlp ARCHIVE BATCH FEATURES`, no Python in the process.
#include <ember/script.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, const char* argv[]) {
  if (argc != 4) {
    std::cerr << "usage: bench_jit_mlp ARCHIVE BATCH FEATURES\n";
    return 2;
  }
  ember::jit::Module m = ember::jit::load(argv[1]);
  m.eval();
  ember::NoGradGuard no_grad;
  ember::Tensor x = ember::randn({int64_t(std::stoll(argv[2])), int64_t(std::stoll(argv[3]))});
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 50; ++i) m.forward({x});
  std::vector<double> times;
  auto start = clock::now();
  while (std::chrono::duration<double>(clock::now() - start).count() < 1.0 || times.size() < 100) {
    auto t0 = clock::now();
    m.forward({x});
    times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + long(times.size() / 2), times.end());
  std::cout << times[times.size() / 2] << "\n";
}
