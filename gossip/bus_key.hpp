// The cluster secret on the gossip bus: every datagram a node sends is sealed (a header, the
// payload, an HMAC-SHA256 tag over both), and a node with a secret believes only datagrams
// sealed with it. The header carries the sender's wall-clock time and a per-process epoch
// and counter, so a datagram recorded and sent again is refused: too old past the window,
// already seen within it.
//
// Two secrets may be held at once: the first seals and is accepted, the second is only
// accepted (rotation: gossip/README.md, "The cluster secret").
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fg {

struct BusCounters {
  std::atomic<uint64_t> refused_unsealed{0};  // no seal (or garbage)
  std::atomic<uint64_t> refused_bad_mac{0};   // a secret this node does not hold, or altered
  std::atomic<uint64_t> refused_stale{0};     // sent too long ago (or its clock is far off)
  std::atomic<uint64_t> refused_replay{0};    // seen already
  std::atomic<uint64_t> refused_peer{0};      // peer-link connections without the secret
};

// The non-blank lines of a file holding secrets (the cluster secret, the admin token),
// surrounding white space dropped; nullopt, with `why`, when it cannot be read.
std::optional<std::vector<std::string>> read_secret_lines(const std::string& path,
                                                          const std::string& what,
                                                          std::string& why);

class BusKey {
 public:
  static constexpr size_t kMinSecret = 16;
  static constexpr int64_t kWindowMs = 60'000;  // how far a sender's clock may be off

  // `now_ms`: the wall clock (tests pass their own).
  explicit BusKey(std::function<int64_t()> now_ms);

  // The secrets: the first seals, both are accepted; false (and nothing changes) if the
  // first is missing or one is shorter than kMinSecret.
  bool set(const std::vector<std::string>& secrets, std::string& why);
  bool active() const;

  // `payload` sealed with the first secret.
  std::string seal(std::string_view payload);
  // The payload of a sealed datagram (a view into it), or nullopt (counted) if it is not
  // to be believed.
  std::optional<std::string_view> open(std::string_view datagram);

  // The peer-link handshake, before any frame: the connecting side sends kHelloBytes
  // (a fresh nonce and its clock, MAC'd with the first secret); the accepting side answers
  // kProofBytes (a MAC of that hello under the same secret), or hangs up. Each side thereby
  // shows the other it holds a secret both accept; a hello is believed once.
  static constexpr size_t kHelloBytes = 48;
  static constexpr size_t kProofBytes = 20;
  std::string peer_hello();
  // The accepting side: the proof to send back, or nullopt (counted) to hang up.
  std::optional<std::string> peer_answer(std::string_view hello);
  // The connecting side: whether `proof` answers `hello`.
  bool peer_proven(std::string_view hello, std::string_view proof) const;
  void count_refused_peer() { counters_.refused_peer.fetch_add(1, std::memory_order_relaxed); }

  const BusCounters& counters() const { return counters_; }

  // The secrets in `path`: the first line, and a second one if there is (blank lines and
  // surrounding white space ignored); nullopt with `why` when the file cannot be read.
  static std::optional<std::vector<std::string>> read_file(const std::string& path,
                                                           std::string& why);

 private:
  struct Secret {
    std::string key;
    uint32_t id = 0;  // the first 4 bytes of its SHA-256: which secret sealed a datagram
  };
  struct Seen {  // one sender process (epoch): its highest counter, the 64 below it
    uint64_t top = 0;
    uint64_t bits = 0;
    int64_t last_ms = 0;
  };
  bool fresh(uint64_t epoch, uint64_t counter, int64_t now);

  std::function<int64_t()> now_ms_;
  mutable std::mutex mu_;  // guards secrets_ (set on SIGHUP), seen_ and next_
  std::vector<Secret> secrets_;
  std::unordered_map<uint64_t, Seen> seen_;
  std::unordered_map<std::string, int64_t> hellos_;  // nonces believed, until they go stale
  uint64_t epoch_;
  uint64_t next_ = 1;
  BusCounters counters_;
};

}  // namespace fg
