// SmallVec: a vector with inline room for N elements, so that tensor shapes
// and strides (almost always <= 6 dims) cost no heap allocation.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <type_traits>

namespace ember {

template <typename T, size_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable<T>::value, "SmallVec holds trivial types");

 public:
  SmallVec() = default;
  explicit SmallVec(size_t n, T v = T()) { resize(n, v); }
  SmallVec(std::initializer_list<T> il) { assign(il.begin(), il.end()); }
  template <typename It, typename = decltype(*std::declval<It>())>
  SmallVec(It b, It e) {
    assign(b, e);
  }
  SmallVec(const SmallVec& o) { assign(o.begin(), o.end()); }
  SmallVec(SmallVec&& o) noexcept { steal(o); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  ~SmallVec() { release(); }

  template <typename It>
  void assign(It b, It e) {
    size_t n = size_t(e - b);
    size_ = 0;
    reserve(n);
    for (size_t i = 0; i < n; ++i) data_[i] = T(b[i]);
    size_ = n;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t c = std::max(n, cap_ * 2);
    T* p = static_cast<T*>(std::malloc(c * sizeof(T)));
    if (size_) std::memcpy(p, data_, size_ * sizeof(T));
    if (data_ != inline_) std::free(data_);
    data_ = p;
    cap_ = c;
  }
  void resize(size_t n, T v = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  void push_back(T v) {
    if (size_ == cap_) reserve(size_ + 1);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  void insert(size_t pos, T v) {
    push_back(v);
    for (size_t i = size_ - 1; i > pos; --i) data_[i] = data_[i - 1];
    data_[pos] = v;
  }
  void erase(size_t pos) {
    for (size_t i = pos; i + 1 < size_; ++i) data_[i] = data_[i + 1];
    --size_;
  }
  void clear() { size_ = 0; }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  bool operator==(const SmallVec& o) const {
    if (size_ != o.size_) return false;
    // A plain loop: std::equal becomes a memcmp call, slower for a handful of dims.
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == o.data_[i])) return false;
    return true;
  }
  bool operator!=(const SmallVec& o) const { return !(*this == o); }

 private:
  void release() {
    if (data_ != inline_) std::free(data_);
    data_ = inline_;
    cap_ = N;
    size_ = 0;
  }
  void steal(SmallVec& o) {
    if (o.data_ == o.inline_) {
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(T));
      data_ = inline_;
      cap_ = N;
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      o.data_ = o.inline_;
      o.cap_ = N;
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  T inline_[N];
  T* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = N;
};

using Shape = SmallVec<int64_t, 6>;

}  // namespace ember
