// Keeps this node's Book equal to everyone else's. Every gossip message advertises the
// sender's book digest; hearing a different one starts a push-pull with that node over a
// peer link (this node's whole book out, theirs back, both merged). A change made here is
// pushed to every live member at once, so a policy set on one node is in force on all of
// them within a round trip; the digests catch whatever a push missed. Cluster thread only.
#pragma once
#include <asio.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "book.hpp"
#include "peer_link.hpp"

namespace fg {

constexpr uint32_t kPeerBook = 4;  // BookMsg -> BookMsg (the responder's book after merging)

class BookSync {
 public:
  using CallFn = std::function<void(const std::string& addr, uint32_t kind, std::string body,
                                    std::chrono::milliseconds deadline, PeerCallback cb)>;
  BookSync(Book& book, CallFn call) : book_(book), call_(std::move(call)) {}

  // A message from `addr` advertised `digest` (not ours).
  void on_advert(const std::string& addr, uint64_t digest, int64_t now_ms);
  // A peer's push-pull: merge theirs, answer with ours.
  void on_request(const std::string& body, PeerServer::Respond respond);
  // The book changed; pushes local writes to every address in `live`.
  void on_change(const std::vector<std::string>& live);

 private:
  struct Peer {
    bool in_flight = false;
    bool again = false;
    int64_t last_ms = 0;
  };
  void exchange(const std::string& addr);
  void merge(const std::string& body);

  Book& book_;
  CallFn call_;
  std::map<std::string, Peer> peers_;
  uint64_t merged_digest_ = 0;  // the book as our last merge left it: not ours to push
};

}  // namespace fg
