// The batcher's flights: filled on the I/O thread, read by shard threads and peer callbacks,
// completed back on the I/O thread. A flight is reused once every waiter has its answers.
#include "io_batcher.hpp"

#include "lease_upkeep.hpp"
#include "replica_acks.hpp"
#include "services.hpp"

namespace fg {

namespace {
// The flight its own flush handler is submitting on this thread. Thread-local: a shard
// thread or a peer callback finishing a flight at the same moment must post, never take
// the in-place route.
thread_local const void* submitting_here = nullptr;
}  // namespace

struct IoBatcher::InFlight : BatchSink, std::enable_shared_from_this<InFlight> {
  IoBatcher* owner = nullptr;
  Flight flight;
  std::vector<std::shared_ptr<BatchWaiter>> waiters;

  // Called by the last shard or peer answer to finish; everything else happens on the I/O
  // thread.
  void batch_done() override {
    if (owner->svc_.cluster && needs_replica_ack(*flight.batch)) {
      return await_replicas(*owner->svc_.cluster, flight.batch, [self = shared_from_this()] {
        give_back_unreplicated(self->owner->svc_, *self->flight.batch);
        self->finish();
      });
    }
    finish();
  }

  void finish() {
    if (submitting_here == this) {
      // Done in place while its own flush handler sends it: that handler completes it
      // when it has finished sending (no post, no extra turn of the event loop).
      done_here = true;
      return;
    }
    asio::post(owner->io_, [self = shared_from_this()] { self->complete(); });
  }

  void complete() {
    flight.batch->sink.reset();
    for (auto& w : waiters) w->batch_complete(flight);
    waiters.clear();
    flight.clear();
    owner->spare_.push_back(shared_from_this());
  }

  bool done_here = false;
};

IoBatcher::IoBatcher(asio::io_context& io, Services& svc, size_t max_ops)
    : io_(io), svc_(svc), max_ops_(max_ops) {}

std::shared_ptr<IoBatcher::InFlight> IoBatcher::take() {
  if (!spare_.empty()) {
    auto f = std::move(spare_.back());
    spare_.pop_back();
    return f;
  }
  auto f = std::make_shared<InFlight>();
  f->owner = this;
  return f;
}

Flight& IoBatcher::current() {
  if (!filling_) filling_ = take();
  return filling_->flight;
}

void IoBatcher::join(std::shared_ptr<BatchWaiter> w) {
  filling_->waiters.push_back(std::move(w));
  const Flight& f = filling_->flight;
  if (f.batch->ops.size() + f.forwards.size() >= max_ops_) {
    flush();
  } else if (turns_ == 0) {
    post_flush();
  }
}

void IoBatcher::settle() {
  ++turns_;  // waiters completed here that join again leave in this loop too
  // A connection whose batches keep running in place would keep this loop to itself (a
  // pipeline of slow scripts, each its own batch): past a slice, the rest waits for the
  // other ready sockets.
  const int64_t until_ns = svc_.clock->now_ns() + kSettleSliceNs;
  while (filling_ && !filling_->waiters.empty()) {
    if (svc_.clock->now_ns() > until_ns) {
      post_flush();
      break;
    }
    if (!filling_->flight.forwards.empty()) {
      // A flight with requests for peers waits for the other sockets made ready by the same
      // poll: their requests for the same owners then share one peer request each, instead
      // of one peer round trip per connection (what -P 1 traffic through a non-owner made).
      post_flush();
      break;
    }
    flush(true);
  }
  --turns_;
}

void IoBatcher::queue_backlog(std::shared_ptr<Backlogged> c) {
  backlog_.push_back(std::move(c));
  if (backlog_posted_) return;
  backlog_posted_ = true;
  asio::post(io_, [this] { serve_backlog(); });
}

void IoBatcher::serve_backlog() {
  backlog_posted_ = false;
  // Only those queued before this slice: one that queues again waits for the next slice.
  const int64_t until_ns = svc_.clock->now_ns() + kBacklogSliceNs;
  for (size_t n = backlog_.size(); n > 0 && !backlog_.empty(); --n) {
    auto c = std::move(backlog_.front());
    backlog_.pop_front();
    {
      Turn turn(*this);  // (its flight leaves, and mostly completes, before the next)
      c->take_turn();
    }
    if (svc_.clock->now_ns() > until_ns) break;
  }
  if (!backlog_.empty() && !backlog_posted_) {
    backlog_posted_ = true;
    asio::post(io_, [this] { serve_backlog(); });  // (after what became ready meanwhile)
  }
}

void IoBatcher::post_flush() {
  if (flush_posted_) return;
  flush_posted_ = true;
  // Runs after the handlers already queued in this turn (the other ready sockets).
  asio::post(io_, [this] {
    flush_posted_ = false;
    flush(true);
  });
}

void IoBatcher::flush(bool own_handler) {
  if (!filling_ || filling_->waiters.empty()) return;
  auto f = std::move(filling_);
  Flight& fl = f->flight;
  fl.batch->sink = f;  // released when the flight completes
  const int calls = static_cast<int>(fl.forwards.size());
  // Flushed by its own handler (not from inside a waiter's join), a flight whose shards
  // all ran in place is complete when submit returns: its waiters hear it here and now.
  if (svc_.cluster) fl.batch->replication_mark = replication_mark(*svc_.cluster);
  if (own_handler) submitting_here = f.get();
  svc_.shards->submit(fl.batch, calls);
  submitting_here = nullptr;
  if (f->done_here) {
    f->done_here = false;
    return f->complete();
  }
  for (ForwardCall& c : fl.forwards) {
    svc_.forwarder->send(c.peer_addr, c.batch().SerializeAsString(),
                         svc_.settings.forward_timeout_ms,
                         [batch = fl.batch, call = &c](bool ok, std::string body) {
                           call->ok = ok;
                           call->body = std::move(body);
                           batch->finish_one();
                         });
  }
}

}  // namespace fg
