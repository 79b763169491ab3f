// Device: where a tensor's memory lives.
#pragma once
#include <cstdint>
#include <string>

namespace ember {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = -1;  // -1: "the current one" (CUDA) / unused (CPU)

  Device() = default;
  Device(DeviceType t, int idx = -1) : type(t), index(idx) {}
  /// Parses "cpu", "cuda", "cuda:1"; raises RuntimeError on anything else.
  static Device parse(const std::string& s);
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;
};

}  // namespace ember
