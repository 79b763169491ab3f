// The record of kernel registrations (Note [Kernel registration], registration.h).
#include "ember/kernels/registration.h"

#include <mutex>

namespace ember {
namespace {

struct Families {
  std::mutex mu;
  std::vector<std::string> names[kNumDeviceTypes];
};

// Function-local: registrations run during other files' static initialization, before this
// file's own globals are guaranteed to exist.
Families& families() {
  static Families* f = new Families();  // never destroyed: registrations of a library
  return *f;                            // unloaded at exit may still run after main
}

}  // namespace

void record_kernel_family(DeviceType device, const char* family) {
  Families& f = families();
  std::lock_guard<std::mutex> lock(f.mu);
  f.names[int(device)].emplace_back(family);
}

std::vector<std::string> kernel_families(DeviceType device) {
  Families& f = families();
  std::lock_guard<std::mutex> lock(f.mu);
  return f.names[int(device)];
}

}  // namespace ember
