// A client connection's unread input (RESP or native): reads go in at the end, the door
// consumes whole requests from the front. It compacts before growing, grows by doubling up
// to a cap while one request is larger than it holds, and gives a big buffer back to the
// system once drained, so a burst of large requests does not pin memory for the
// connection's life.
#pragma once
#include <algorithm>
#include <cstring>
#include <vector>

namespace fg {

class InputBuffer {
 public:
  InputBuffer(size_t initial, size_t max) : initial_(initial), max_(max), buf_(initial) {}

  const char* data() const { return buf_.data() + begin_; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  size_t capacity() const { return buf_.size(); }
  void consume(size_t n) { begin_ += n; }

  // Makes room for the next read (at least 4 KiB). False when the buffer is at its cap and
  // still full: only consuming makes room then.
  bool make_room() {
    if (begin_ == end_) {
      begin_ = end_ = 0;
      if (buf_.size() > 4 * initial_) std::vector<char>(initial_).swap(buf_);
    }
    if (buf_.size() - end_ >= kMinRead) return true;
    if (begin_ > 0) {  // move the unconsumed tail to the front
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (buf_.size() - end_ >= kMinRead) return true;
    if (buf_.size() >= max_) return false;
    buf_.resize(std::min(buf_.size() * 2, max_));
    return true;
  }
  // Where the next read goes, and how much fits.
  char* space() { return buf_.data() + end_; }
  size_t space_size() const { return buf_.size() - end_; }
  void filled(size_t n) { end_ += n; }

 private:
  static constexpr size_t kMinRead = 4096;
  size_t initial_, max_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
};

}  // namespace fg
