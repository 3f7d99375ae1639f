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
  struct Waiter {
    std::shared_ptr<BatchWaiter> w;
    uint64_t calls;  // the forward calls its requests ride in (Flight::touched_calls)
  };
  std::vector<Waiter> waiters;
  size_t told = 0;           // waiters told so far (those told are null)
  bool shards_done = false;  // the node's own part: its shards (and, if asked, its replicas)
  int calls_left = 0;        // forward calls still out
  uint64_t calls_back = 0;   // those back (a bit each; the last bit once every call is)
  bool done_here = false;

  // Called by the last shard to finish its part (or by the pool at once when there is
  // none); everything else happens on the I/O thread.
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
      // Done in place while its own flush handler sends it: that handler goes on when it has
      // finished sending (no post, no extra turn of the event loop).
      done_here = true;
      return;
    }
    asio::post(owner->io_, [self = shared_from_this()] {
      self->shards_done = true;
      self->progress();
    });
  }

  // A forward call is back (on the I/O thread).
  void call_back(size_t i, bool ok, std::string body) {
    ForwardCall& c = flight.forwards[i];
    c.ok = ok;
    c.body = std::move(body);
    if (i < 63) calls_back |= uint64_t{1} << i;
    if (--calls_left == 0) calls_back = ~uint64_t{0};
    progress();
  }

  // Each waiter is told as soon as its own parts are back: the node's shards and the calls
  // its requests ride in. A connection whose keys are all here is not held by another's
  // forwards in the same flight, nor is a forwarded batch by this node's own forwards
  // (which would chain nodes' round trips into each other). The flight is reused once all
  // are told and every call is back.
  void progress() {
    if (!shards_done) return;
    for (size_t i = 0; i < waiters.size(); ++i) {
      Waiter& x = waiters[i];
      if (!x.w || (x.calls & ~calls_back) != 0) continue;
      std::shared_ptr<BatchWaiter> w = std::move(x.w);
      ++told;
      w->batch_complete(flight);
    }
    if (told < waiters.size() || calls_left > 0) return;
    flight.batch->sink.reset();
    waiters.clear();
    told = 0;
    shards_done = false;
    calls_back = 0;
    flight.clear();
    owner->spare_.push_back(shared_from_this());
  }
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
  Flight& f = filling_->flight;
  filling_->waiters.push_back({std::move(w), f.touched_calls});
  f.touched_calls = 0;
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
  f->calls_left = static_cast<int>(fl.forwards.size());
  if (f->calls_left == 0) f->calls_back = ~uint64_t{0};
  // Flushed by its own handler (not from inside a waiter's join), a flight whose shards
  // all ran in place has its own part done when submit returns: its waiters hear it here
  // and now, once the calls are on their way.
  if (svc_.cluster) fl.batch->replication_mark = replication_mark(*svc_.cluster);
  if (own_handler) submitting_here = f.get();
  svc_.shards->submit(fl.batch, 0);
  submitting_here = nullptr;
  for (size_t i = 0; i < fl.forwards.size(); ++i) {
    ForwardCall& c = fl.forwards[i];
    svc_.forwarder->send(c.peer_addr, c.batch().SerializeAsString(),
                         svc_.settings.forward_timeout_ms, [f, i](bool ok, std::string body) {
                           asio::post(f->owner->io_, [f, i, ok, body = std::move(body)]() mutable {
                             f->call_back(i, ok, std::move(body));
                           });
                         });
  }
  if (f->done_here) {
    f->done_here = false;
    f->shards_done = true;
    f->progress();
  }
}

}  // namespace fg
