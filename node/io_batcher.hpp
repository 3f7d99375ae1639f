// Gathers the keyed ops of every connection served by one I/O thread during one turn of
// its event loop into a single batch: one message per touched shard per turn, and one
// completion posted back, however many connections took part. In cluster mode the
// commands they forward to other nodes ride in the same flight.
#pragma once
#include <asio.hpp>
#include <memory>
#include <vector>

#include "forward.hpp"
#include "services.hpp"
#include "shard_pool.hpp"

namespace fg {

// A connection whose requests ride in a flight: told on its own I/O thread when the
// flight is done.
class BatchWaiter {
 public:
  virtual ~BatchWaiter() = default;
  virtual void batch_complete(const Batch& batch, const ForwardList& forwards) = 0;
};

class IoBatcher {
 public:
  IoBatcher(asio::io_context& io, Services& svc, size_t max_ops);

  // The batch ops are appended to during this turn, and (cluster mode) the calls to
  // other nodes that travel with it: the flight completes when both are done.
  Batch& current();
  ForwardList* current_forwards();
  // `c` appended ops to current(): it is told through BatchWaiter::batch_complete. The
  // batch goes to the shards at the end of this turn, or now if it has grown large.
  void join(std::shared_ptr<BatchWaiter> c);

 private:
  struct Flight;  // one batch on its way through the shards, and who waits for it
  void flush();
  std::shared_ptr<Flight> take_flight();

  asio::io_context& io_;
  Services& svc_;
  size_t max_ops_;
  std::shared_ptr<Flight> filling_;
  std::vector<std::shared_ptr<Flight>> spare_;  // finished flights, reused
  bool flush_posted_ = false;
};

}  // namespace fg
