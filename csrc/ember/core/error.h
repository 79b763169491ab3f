// Error types and checking macros. Every C++ error that can reach Python is
// one of these; python/module.cpp maps them to Python exceptions in one place.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

enum class ErrorKind { Runtime, Index, Type, Value, NotImplemented };

/// An error raised by ember. `kind` picks the Python exception class.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& msg) : std::runtime_error(msg), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  append(os, rest...);
}
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  append(os, args...);
  return os.str();
}
}  // namespace detail

template <typename... Args>
[[noreturn]] void raise(ErrorKind kind, const Args&... args) {
  throw Error(kind, detail::str(args...));
}

}  // namespace ember

#define EMBER_CHECK_KIND(kind, cond, ...)                                \
  do {                                                                   \
    if (__builtin_expect(!(cond), 0)) ::ember::raise(kind, __VA_ARGS__); \
  } while (0)
/// Raises RuntimeError with the streamed message when `cond` is false.
#define EMBER_CHECK(cond, ...) EMBER_CHECK_KIND(::ember::ErrorKind::Runtime, cond, __VA_ARGS__)
#define EMBER_CHECK_INDEX(cond, ...) EMBER_CHECK_KIND(::ember::ErrorKind::Index, cond, __VA_ARGS__)
#define EMBER_CHECK_TYPE(cond, ...) EMBER_CHECK_KIND(::ember::ErrorKind::Type, cond, __VA_ARGS__)
#define EMBER_CHECK_VALUE(cond, ...) EMBER_CHECK_KIND(::ember::ErrorKind::Value, cond, __VA_ARGS__)
#define EMBER_ERROR(...) ::ember::raise(::ember::ErrorKind::Runtime, __VA_ARGS__)
