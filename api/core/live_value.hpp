// LiveValue: a setting that may change at runtime.
#pragma once
#include <atomic>

namespace fg {

// A setting other threads read while it may change at runtime (CONFIG SET): loaded
// where it is used, copied as a value.
template <class T>
class LiveValue {
 public:
  explicit LiveValue(T v = T{}) : v_(v) {}
  LiveValue(const LiveValue& o) : v_(o.get()) {}
  LiveValue& operator=(const LiveValue& o) {
    set(o.get());
    return *this;
  }
  LiveValue& operator=(T v) {
    set(v);
    return *this;
  }
  T get() const { return v_.load(std::memory_order_relaxed); }
  void set(T v) { v_.store(v, std::memory_order_relaxed); }
  operator T() const { return get(); }  // NOLINT: read as the value it holds

 private:
  std::atomic<T> v_;
};

}  // namespace fg
