// A small load generator for the gateway door: `concurrency` ShouldRateLimit calls kept in
// flight (gRPC's callback API, spread over `channels` HTTP/2 connections), each for one
// descriptor (key k, a random value of `keyspace`) of domain "bench", until `requests` are
// answered or `seconds` pass. Prints what run-rls-bench reads:
//   requests: N  errors: E  over: O  seconds: S  rps: R  p50_us: A  p99_us: B
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

namespace rls = envoy::service::ratelimit::v3;
using Clock = std::chrono::steady_clock;

namespace {

struct Shared {
  std::vector<std::unique_ptr<rls::RateLimitService::Stub>> stubs;
  int64_t requests = 0;
  int keyspace = 1;
  Clock::time_point until;
  std::atomic<int64_t> started{0}, done{0}, errors{0}, over{0};
  std::vector<int32_t> latency_us;  // by the call's number
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;  // lanes still issuing calls
};

// One of `concurrency` lanes: a call, and when it is answered the next.
class Lane {
 public:
  Lane(Shared& s, int index) : s_(s), index_(index), rng_(index * 7919 + 1) {}
  void next() {
    const int64_t n = s_.started.fetch_add(1);
    if (n >= s_.requests || Clock::now() >= s_.until) return finish();
    ctx_ = std::make_unique<grpc::ClientContext>();
    req_.Clear();
    resp_.Clear();
    req_.set_domain("bench");
    auto* e = req_.add_descriptors()->add_entries();
    e->set_key("k");
    e->set_value("v" + std::to_string(rng_() % static_cast<uint32_t>(s_.keyspace)));
    const auto t0 = Clock::now();
    auto& stub = *s_.stubs[static_cast<size_t>(index_) % s_.stubs.size()];
    stub.async()->ShouldRateLimit(ctx_.get(), &req_, &resp_, [this, n, t0](grpc::Status st) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
      s_.latency_us[static_cast<size_t>(n)] = static_cast<int32_t>(us.count());
      if (!st.ok()) s_.errors.fetch_add(1);
      if (resp_.overall_code() == rls::RateLimitResponse::OVER_LIMIT) s_.over.fetch_add(1);
      s_.done.fetch_add(1);
      next();
    });
  }

 private:
  void finish() {
    std::lock_guard lock(s_.mu);
    if (--s_.running == 0) s_.cv.notify_all();
  }
  Shared& s_;
  int index_;
  std::mt19937 rng_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  rls::RateLimitRequest req_;
  rls::RateLimitResponse resp_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr,
                 "usage: rls_load HOST:PORT CONCURRENCY CHANNELS REQUESTS SECONDS KEYSPACE\n");
    return 2;
  }
  Shared s;
  const std::string target = argv[1];
  const int concurrency = std::max(1, std::atoi(argv[2]));
  const int channels = std::max(1, std::atoi(argv[3]));
  s.requests = std::max<int64_t>(1, std::atoll(argv[4]));
  const int seconds = std::max(1, std::atoi(argv[5]));
  s.keyspace = std::max(1, std::atoi(argv[6]));
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", i);  // (distinct arguments: a connection each)
    s.stubs.push_back(rls::RateLimitService::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args)));
  }
  s.latency_us.assign(static_cast<size_t>(s.requests), -1);
  const auto t0 = Clock::now();
  s.until = t0 + std::chrono::seconds(seconds);
  std::vector<std::unique_ptr<Lane>> lanes;
  s.running = concurrency;
  for (int i = 0; i < concurrency; ++i) lanes.push_back(std::make_unique<Lane>(s, i));
  for (auto& l : lanes) l->next();
  {
    std::unique_lock lock(s.mu);
    s.cv.wait(lock, [&] { return s.running == 0; });
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<int32_t> lat;
  for (int32_t v : s.latency_us)
    if (v >= 0) lat.push_back(v);
  std::sort(lat.begin(), lat.end());
  auto pct = [&](double p) {
    return lat.empty() ? 0 : lat[std::min(lat.size() - 1, static_cast<size_t>(p * lat.size()))];
  };
  const int64_t done = s.done.load();
  std::printf(
      "requests: %lld  errors: %lld  over: %lld  seconds: %.3f  rps: %.0f  p50_us: %d  p99_us: "
      "%d\n",
      static_cast<long long>(done), static_cast<long long>(s.errors.load()),
      static_cast<long long>(s.over.load()), secs, done / secs, pct(0.50), pct(0.99));
  return s.errors.load() == 0 ? 0 : 1;
}
