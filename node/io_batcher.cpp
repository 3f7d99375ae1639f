// The batcher's flights: filled on the I/O thread, read by shard threads, completed back
// on the I/O thread. A flight is reused once every waiter has its replies.
#include "io_batcher.hpp"

namespace fg {

struct IoBatcher::Flight : BatchSink, std::enable_shared_from_this<Flight> {
  IoBatcher* owner = nullptr;
  BatchPtr batch = std::make_shared<Batch>();
  ForwardList forwards;
  std::vector<std::shared_ptr<BatchWaiter>> waiters;

  // Called by the last shard to finish; everything else happens on the I/O thread.
  void batch_done() override {
    if (owner->svc_.cluster && needs_replica_ack(*batch)) {
      return await_replicas(*owner->svc_.cluster, batch,
                            [self = shared_from_this()] { self->finish(); });
    }
    finish();
  }

  void finish() {
    asio::post(owner->io_, [self = shared_from_this()] {
      self->batch->sink.reset();
      for (auto& c : self->waiters) c->batch_complete(*self->batch, self->forwards);
      self->waiters.clear();
      self->batch->ops.clear();
      self->forwards.clear();
      self->owner->spare_.push_back(self);
    });
  }
};

IoBatcher::IoBatcher(asio::io_context& io, Services& svc, size_t max_ops)
    : io_(io), svc_(svc), max_ops_(max_ops) {}

std::shared_ptr<IoBatcher::Flight> IoBatcher::take_flight() {
  if (!spare_.empty()) {
    auto f = std::move(spare_.back());
    spare_.pop_back();
    return f;
  }
  auto f = std::make_shared<Flight>();
  f->owner = this;
  return f;
}

Batch& IoBatcher::current() {
  if (!filling_) filling_ = take_flight();
  return *filling_->batch;
}

ForwardList* IoBatcher::current_forwards() {
  if (!svc_.cluster) return nullptr;
  if (!filling_) filling_ = take_flight();
  return &filling_->forwards;
}

void IoBatcher::join(std::shared_ptr<BatchWaiter> c) {
  filling_->waiters.push_back(std::move(c));
  if (filling_->batch->ops.size() + filling_->forwards.size() >= max_ops_) {
    flush();
  } else if (!flush_posted_) {
    // Runs after the handlers already queued in this turn (the other ready sockets).
    flush_posted_ = true;
    asio::post(io_, [this] {
      flush_posted_ = false;
      flush();
    });
  }
}

void IoBatcher::flush() {
  if (!filling_ || filling_->waiters.empty()) return;
  auto f = std::move(filling_);
  f->batch->sink = f;  // released when the flight completes
  svc_.shards->submit(f->batch, static_cast<int>(f->forwards.size()));
  if (!f->forwards.empty()) {
    send_forwards(*svc_.cluster, f->batch, f->forwards, svc_.settings.forward_timeout_ms);
  }
}

}  // namespace fg
