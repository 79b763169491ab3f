// Small helpers shared by the GoogleTest files.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/small_vec.h"

namespace ember_test {

/// Runs `f`, expecting an ember::Error of `kind` whose message contains `needle`.
template <typename F>
::testing::AssertionResult raises(F&& f, ember::ErrorKind kind, const std::string& needle) {
  try {
    f();
  } catch (const ember::Error& e) {
    if (e.kind() != kind)
      return ::testing::AssertionFailure()
             << "wrong error kind " << int(e.kind()) << ": " << e.what();
    if (std::string(e.what()).find(needle) == std::string::npos)
      return ::testing::AssertionFailure()
             << "message '" << e.what() << "' lacks '" << needle << "'";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-ember exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

/// A SmallVec as a std::vector, so gtest can print and compare it.
template <typename T, size_t N>
std::vector<T> vec(const ember::SmallVec<T, N>& v) {
  return std::vector<T>(v.begin(), v.end());
}

}  // namespace ember_test
