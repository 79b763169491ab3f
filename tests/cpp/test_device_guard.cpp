// Note [Device guard]: a CUDA kernel runs with its tensors' device current, whatever device
// the thread had current, and the previous one is restored after the call, also when the
// kernel throws. Checked here with fake device hooks standing in for the CUDA runtime, so it
// runs on machines without a GPU; the stub slot is a plain function, as a CUDA kernel's is.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "ember/core/device_guard.h"
#include "ember/kernels/dispatch.h"

namespace {

int g_current = 0;           // the fake runtime's current device
std::vector<int> g_sets;     // every device made current, in order
int g_seen = -1;             // the device current inside the kernel
constexpr int kDevices = 4;  // devices the fake runtime has

int fake_get() { return g_current; }
const char* fake_set(int d) {
  if (d >= kDevices) return "invalid device ordinal";
  g_sets.push_back(d);
  g_current = d;
  return nullptr;
}

using Kernel = int (*)(int);
ember::DispatchStub<Kernel> test_stub("device_guard_test");

int kernel(int x) {
  g_seen = g_current;
  if (x < 0) throw std::runtime_error("kernel failed");
  return x * 2;
}

class DeviceGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = ember::cuda_device_hooks;
    ember::cuda_device_hooks = {&fake_get, &fake_set};
    test_stub.fns[int(ember::DeviceType::CUDA)] = &kernel;
    test_stub.fns[int(ember::DeviceType::CPU)] = &kernel;
    g_current = 0;
    g_sets.clear();
    g_seen = -1;
  }
  void TearDown() override { ember::cuda_device_hooks = saved_; }
  ember::DeviceHooks saved_;
};

}  // namespace

TEST_F(DeviceGuardTest, KernelRunsOnItsTensorsDevice) {
  EXPECT_EQ(test_stub.get(ember::Device(ember::DeviceType::CUDA, 1))(21), 42);
  EXPECT_EQ(g_seen, 1);
  EXPECT_EQ(g_current, 0);  // restored
  EXPECT_EQ(g_sets, (std::vector<int>{1, 0}));
}

TEST_F(DeviceGuardTest, CurrentDeviceIsNotSetAgain) {
  g_current = 2;
  test_stub.get(ember::Device(ember::DeviceType::CUDA, 2))(1);
  EXPECT_EQ(g_seen, 2);
  EXPECT_TRUE(g_sets.empty());
}

TEST_F(DeviceGuardTest, RestoredWhenTheKernelThrows) {
  EXPECT_THROW(test_stub.get(ember::Device(ember::DeviceType::CUDA, 3))(-1), std::runtime_error);
  EXPECT_EQ(g_seen, 3);
  EXPECT_EQ(g_current, 0);
}

TEST_F(DeviceGuardTest, CpuKernelsAndUnindexedDevicesAreLeftAlone) {
  g_current = 1;
  test_stub.get(ember::Device(ember::DeviceType::CPU))(1);
  test_stub.get(ember::Device(ember::DeviceType::CUDA))(1);  // "cuda": the current one
  EXPECT_TRUE(g_sets.empty());
  EXPECT_EQ(g_seen, 1);
}

TEST_F(DeviceGuardTest, NoSuchDeviceIsARuntimeErrorNamingIt) {
  try {
    test_stub.get(ember::Device(ember::DeviceType::CUDA, 7))(1);
    FAIL() << "expected an error";
  } catch (const ember::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot make cuda:7 the current device"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(g_seen, -1);  // the kernel never ran
  EXPECT_EQ(g_current, 0);
}

TEST_F(DeviceGuardTest, NestedGuardsRestoreInOrder) {
  {
    ember::DeviceGuard a(ember::Device(ember::DeviceType::CUDA, 1));
    {
      ember::DeviceGuard b(ember::Device(ember::DeviceType::CUDA, 2));
      EXPECT_EQ(g_current, 2);
    }
    EXPECT_EQ(g_current, 1);
  }
  EXPECT_EQ(g_current, 0);
}

TEST_F(DeviceGuardTest, WithoutTheBackendTheGuardDoesNothing) {
  ember::cuda_device_hooks = {};
  ember::DeviceGuard g(ember::Device(ember::DeviceType::CUDA, 1));
  EXPECT_TRUE(g_sets.empty());
}
