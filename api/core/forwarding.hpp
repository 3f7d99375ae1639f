// Forwarding between nodes, both sides: requests leave through the cluster's peer links as
// decoded ForwardBatches (forward.proto), and the owner runs them through its request core
// on one of its I/O lanes — never on the cluster thread, which carries membership.
#pragma once
#include <functional>
#include <string>

#include "services.hpp"

namespace fg {

class Cluster;

// The Forwarder of a cluster node: peer request kind FORWARD over the cluster's links.
class ClusterForwarder : public Forwarder {
 public:
  explicit ClusterForwarder(Cluster& cluster) : cluster_(cluster) {}
  void send(const std::string& peer_addr, std::string batch, int64_t timeout_ms,
            std::function<void(bool ok, std::string body)> done) override;

 private:
  Cluster& cluster_;
};

// Runs a ForwardBatch another node sent on one of this node's lanes; `respond` gets the
// ForwardOutcomes (ok), or why the batch could not be read, on that lane's thread. Each
// request runs only if the user it names may run it here (as this node knows the user);
// one naming none runs only when it is the sending node's own upkeep, or — with `legacy`
// (cluster-bus-legacy) — when it comes from a node of the previous version, which named
// only restricted users.
void serve_forwarded(Services& svc, std::string batch,
                     std::function<void(bool ok, std::string body)> respond, bool legacy = false);

// Answers peer FORWARD requests on this cluster node.
void serve_forwards(Cluster& cluster, Services& svc);

}  // namespace fg
