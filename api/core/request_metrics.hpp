// What the request path counts for /metrics and the status page: requests per command and
// result, a latency histogram per command, decisions per policy, the most-denied keys and
// the hottest ones.
// Each thread writes its own block (relaxed atomics, no shared cache lines); readers add
// the blocks up. One per node (Services::metrics); `get()` is the process's default, for
// what runs without a node around it.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "policy_ids.hpp"

namespace fg {

// Monotonic nanoseconds, for latencies.
inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

enum class RequestResult : uint8_t { kOk, kError, kAllowed, kDenied, kCount };
std::string_view result_name(RequestResult r);

// Upper bounds (µs) of the latency buckets; the last bucket is +Inf.
inline constexpr std::array<int64_t, 13> kLatencyBoundsUs = {
    50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000};
inline constexpr size_t kLatencyBuckets = kLatencyBoundsUs.size() + 1;
inline constexpr size_t kMaxCommandIds = 512;  // RESP commands, then native ops

class RequestMetrics {
 public:
  struct Counts {
    std::vector<std::array<uint64_t, static_cast<size_t>(RequestResult::kCount)>> requests;
    std::vector<std::array<uint64_t, kLatencyBuckets>> latency;  // per command, not cumulative
    std::vector<uint64_t> latency_sum_us;
    // [allowed, denied, shadow-denied] per policy id (a shadow policy's would-be denials are
    // among its allowed)
    std::vector<std::array<uint64_t, 3>> policy;
  };
  struct DeniedKey {
    std::string key;
    uint64_t denials;
  };

  RequestMetrics();
  ~RequestMetrics();
  RequestMetrics(const RequestMetrics&) = delete;
  RequestMetrics& operator=(const RequestMetrics&) = delete;
  static RequestMetrics& get();

  // One command's outcome, `latency_us` from its arrival to its reply.
  // `n` requests of one command with one result and latency (a run of them answered alike).
  void record(uint16_t command, RequestResult r, int64_t latency_us, uint64_t n = 1);
  void decision(uint16_t policy, bool allowed, bool shadow_denied = false);
  // A denied key (the most-denied list covers about the last two minutes).
  void denied(std::string_view key, int64_t now_s);
  // Hot keys: one decision in kHotSample on each thread is counted by its key, so the
  // hottest keys of about the last two minutes cost a counter per decision. True when this
  // decision's key is to be counted (then call hot()).
  static constexpr uint64_t kHotSample = 16;
  static bool sample_hot() { return (++hot_tick_ & (kHotSample - 1)) == 0; }
  void hot(std::string_view key, int64_t now_s);

  Counts counts() const;
  // INFO commandstats' view: the counts since the last CONFIG RESETSTAT (/metrics keeps
  // counting from the start, as a Prometheus counter must).
  Counts counts_since_reset() const;
  void reset_view();
  std::vector<DeniedKey> top_denied(size_t n, int64_t now_s) const { return top(n, now_s, false); }
  // The keys decided most often (`denials` holds the estimated decisions: sampled ones
  // times kHotSample).
  std::vector<DeniedKey> top_hot(size_t n, int64_t now_s) const { return top(n, now_s, true); }

 private:
  struct Block;
  Block& local();
  Block& local_slow();
  std::vector<DeniedKey> top(size_t n, int64_t now_s, bool hot) const;
  static inline thread_local uint64_t hot_tick_ = 0;  // (per thread, whichever node)
  const uint64_t id_;  // unique for the process's life: a thread's cached block is keyed by it
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::unordered_map<std::thread::id, Block*> by_thread_;
  std::unique_ptr<Counts> base_;  // (under mu_) the counts at the last reset_view
};

// Error replies sent to clients, by their code (the first word: ERR, WRONGTYPE, a script's
// own), for INFO errorstats and total_error_replies, as Redis counts them. Codes are
// bounded: past kMaxCodes distinct ones (a script can make up codes at will), new codes
// count under ERRORSTATS_OVERFLOW.
class ErrorStats {
 public:
  static constexpr size_t kMaxCodes = 128;
  // `reply`: the error as written, from its '-' ("-WRONGTYPE Operation ...\r\n").
  // `n` replies alike.
  void count(std::string_view reply, uint64_t n = 1);
  std::vector<std::pair<std::string, uint64_t>> codes() const;  // in code order
  uint64_t total() const { return total_.load(std::memory_order_relaxed); }
  void reset();

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t, std::less<>> codes_;
  std::atomic<uint64_t> total_{0};
};

}  // namespace fg
