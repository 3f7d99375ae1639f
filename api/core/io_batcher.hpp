// Gathers what every door of one I/O thread submits during one turn of its event loop into
// one flight (flight.hpp): one message per touched shard and one peer request per owner per
// turn, however many connections took part. Each waiter is told as soon as its own parts are
// back (the node's shards, and the forward calls its requests ride in), not when the slowest
// owner of the flight has answered.
#pragma once
#include <asio.hpp>
#include <deque>
#include <memory>
#include <vector>

#include "flight.hpp"

namespace fg {

struct Services;

// Something whose requests ride in a flight (a connection, a forwarded batch, the node's
// lease upkeep): told on the flight's I/O thread once the flight is back.
class BatchWaiter {
 public:
  virtual ~BatchWaiter() = default;
  virtual void batch_complete(Flight& flight) = 0;
};

// A connection with a backlog (IoBatcher's queue of them): takes one turn — what its input
// holds, up to one batch — when the queue comes to it.
class Backlogged {
 public:
  virtual ~Backlogged() = default;
  virtual void take_turn() = 0;
};

class IoBatcher {
 public:
  IoBatcher(asio::io_context& io, Services& svc, size_t max_ops);

  // The flight requests join during this turn.
  Flight& current();
  // `w` submitted to current(): it is told through batch_complete, once the shards and
  // the forward calls its requests joined (Flight::touched_calls) are done. The flight
  // leaves at the end of this turn, or now if it has grown large.
  void join(std::shared_ptr<BatchWaiter> w);
  asio::io_context& io() { return io_; }
  // A handler that sends the filling flight is queued on the event loop.
  bool flush_queued() const { return flush_posted_; }

  // Fair reading. A connection that reads more than a little at a time (a flood, a deep
  // pipeline) is not served from its own read handler but queued here, and the queue is
  // served by one posted handler a slice (about kBacklogSliceNs) at a time, a turn per
  // connection in order, the rest after the event loop has polled again: a connection with
  // a few requests is then answered after one slice, not after every backlog's turn (64
  // flooding connections made that a round of tens of milliseconds on one thread).
  void queue_backlog(std::shared_ptr<Backlogged> c);

  // Held by a socket's read handler around its processing: what joins meanwhile leaves
  // when the outermost Turn closes, on this thread, instead of in a posted handler. Its
  // shards run in place, so the replies are written before the handler returns and the
  // event loop sleeps in one epoll_wait per turn (a posted handler makes the next poll a
  // non-blocking one). Waiters that join again while it completes leave in the same loop.
  // Except a flight with requests for peers: it leaves in a posted handler, after the
  // other sockets the same poll made ready, so their forwards to one owner travel together.
  class Turn {
   public:
    explicit Turn(IoBatcher& b) : b_(b) { ++b_.turns_; }
    ~Turn() {
      if (--b_.turns_ == 0) b_.settle();
    }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

   private:
    IoBatcher& b_;
  };

 private:
  struct InFlight;  // a flight on its way through the shards and peers, and who waits
  // Sends the filling flight; `own_handler`: called by its own posted handler, where the
  // flight may complete before this returns.
  void flush(bool own_handler = false);
  void settle();
  void post_flush();  // the filling flight leaves once this turn's ready handlers have run
  std::shared_ptr<InFlight> take();

  asio::io_context& io_;
  Services& svc_;
  size_t max_ops_;
  std::shared_ptr<InFlight> filling_;
  std::vector<std::shared_ptr<InFlight>> spare_;  // finished flights, reused
  bool flush_posted_ = false;
  int turns_ = 0;                                       // open Turns
  static constexpr int64_t kSettleSliceNs = 1'000'000;  // settle()'s in-place work per turn
  void serve_backlog();
  std::deque<std::shared_ptr<Backlogged>> backlog_;
  bool backlog_posted_ = false;
  static constexpr int64_t kBacklogSliceNs = 500'000;
};

}  // namespace fg
