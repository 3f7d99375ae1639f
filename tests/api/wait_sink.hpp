// A BatchSink a test thread can wait on: set when the last shard finishes a batch.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "shard_op.hpp"

namespace fg {

struct WaitSink : BatchSink {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  void batch_done() override {
    std::lock_guard<std::mutex> g(mu);
    done = true;
    cv.notify_all();
  }
  // True if the batch completed within `timeout`.
  bool wait(std::chrono::seconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> g(mu);
    return cv.wait_for(g, timeout, [&] { return done; });
  }
};

}  // namespace fg
