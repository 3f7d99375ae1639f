// Requests that are no client's, run through the request core on one of the node's I/O
// lanes: a batch another node forwarded here, the node's own renewals and releases of BOUND
// leases. The job waits (a few milliseconds at a time) while a slot's state is arriving,
// submits everything to the lane's current flight, and hands the outcomes to `done`.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "io_batcher.hpp"
#include "request_core.hpp"
#include "timer.hpp"

namespace fg {

class RequestJob : public BatchWaiter, public std::enable_shared_from_this<RequestJob> {
 public:
  using Done = std::function<void(std::vector<Outcome>& outcomes)>;

  // `keep` owns whatever the requests' views point into. `done` runs on the lane's thread.
  static void start(Services& svc, Lane& lane, std::vector<Request> requests, Door door,
                    std::shared_ptr<const void> keep, Done done);
  // The same, run now: the caller is the lane's thread (a door that is its own lane).
  static void start_here(Services& svc, Lane& lane, std::vector<Request> requests, Door door,
                         std::shared_ptr<const void> keep, Done done);
  RequestJob(Services& svc, Lane& lane, std::vector<Request> requests, Door door,
             std::shared_ptr<const void> keep, Done done);
  void batch_complete(Flight& flight) override;

 private:
  void run();

  Services& svc_;
  Lane& lane_;
  RequestCore core_;
  std::vector<Request> requests_;
  Door door_;
  std::shared_ptr<const void> keep_;
  std::shared_ptr<const Routing> routing_;
  Done done_;
  std::vector<Pending> pending_;
  std::vector<Outcome> outcomes_;
  SteadyTimer timer_;
  std::deque<std::string> texts_;  // texts the core makes for these outcomes
  int waits_ = 0;
  int64_t arrived_ns_ = 0;
};

}  // namespace fg
