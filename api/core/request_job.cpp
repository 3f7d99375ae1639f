// A RequestJob's life: (wait) -> submit -> flight -> outcomes -> done.
#include "request_job.hpp"

#include <algorithm>

#include "request_metrics.hpp"

namespace fg {

namespace {
constexpr auto kWaitStep = std::chrono::milliseconds(2);
constexpr int kMaxWaits = 5000;  // 10 s: past the longest a slot's state may be awaited
}  // namespace

void RequestJob::start(Services& svc, Lane& lane, std::vector<Request> requests, Door door,
                       std::shared_ptr<const void> keep, Done done) {
  auto job = std::make_shared<RequestJob>(svc, lane, std::move(requests), door, std::move(keep),
                                          std::move(done));
  asio::post(*lane.io, [job, batcher = lane.batcher] {
    // As a socket's read handler does: a flight holding only shard work leaves, and is
    // answered, in place when this closes, not a turn of the event loop later.
    IoBatcher::Turn turn(*batcher);
    job->run();
  });
}

void RequestJob::start_here(Services& svc, Lane& lane, std::vector<Request> requests, Door door,
                            std::shared_ptr<const void> keep, Done done) {
  std::make_shared<RequestJob>(svc, lane, std::move(requests), door, std::move(keep),
                               std::move(done))
      ->run();
}

RequestJob::RequestJob(Services& svc, Lane& lane, std::vector<Request> requests, Door door,
                       std::shared_ptr<const void> keep, Done done)
    : svc_(svc),
      lane_(lane),
      core_(svc),
      requests_(std::move(requests)),
      door_(door),
      keep_(std::move(keep)),
      done_(std::move(done)),
      timer_(*lane.io) {
  door_.texts = &texts_;
}

void RequestJob::run() {
  routing_ = svc_.routing ? svc_.routing->get() : nullptr;
  door_.routing = routing_.get();
  if (routing_ && waits_ < kMaxWaits) {
    for (const Request& r : requests_) {
      if (keyed(r.verb) && core_.must_wait(r.key, routing_.get())) {
        ++waits_;
        timer_.expires_after(kWaitStep);
        timer_.async_wait([self = shared_from_this()](asio::error_code ec) {
          if (!ec) self->run();
        });
        return;
      }
    }
  }
  arrived_ns_ = steady_ns();
  Flight& f = lane_.batcher->current();
  pending_.resize(requests_.size());
  outcomes_.resize(requests_.size());
  bool waits = false;
  // A forwarded transaction's requests: one transaction of this flight, run as one step.
  std::vector<std::pair<uint32_t, uint32_t>> txns;  // the sender's number -> this flight's
  size_t first_op = f.batch->ops.size();
  for (size_t i = 0; i < requests_.size(); ++i) {
    Request& r = requests_[i];
    if (r.txn != 0) {
      auto it = std::find_if(txns.begin(), txns.end(), [&](auto& t) { return t.first == r.txn; });
      r.txn = it != txns.end() ? it->second : txns.emplace_back(r.txn, f.open_txn()).second;
    }
    pending_[i] = core_.submit(r, door_, f, outcomes_[i]);
    waits |= pending_[i].waits();
  }
  if (!txns.empty()) f.atomic_from(first_op);
  if (!waits) return done_(outcomes_);
  lane_.batcher->join(shared_from_this());
}

void RequestJob::batch_complete(Flight& flight) {
  door_.latency_us = (steady_ns() - arrived_ns_) / 1000;
  for (size_t i = 0; i < requests_.size(); ++i) {
    if (pending_[i].waits()) core_.finish(pending_[i], flight, door_, outcomes_[i]);
  }
  done_(outcomes_);
}

}  // namespace fg
