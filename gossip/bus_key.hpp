// The cluster secret on the gossip bus: every datagram a node sends is sealed (a header, the
// payload, an HMAC-SHA256 tag over both), and a node with a secret believes only datagrams
// sealed with it. The header carries the sender's wall-clock time and a per-process epoch
// and counter, so a datagram recorded and sent again is refused: too old past the window,
// already seen within it.
//
// Two secrets may be held at once: the first seals and is accepted, the second is only
// accepted (rotation: gossip/DESIGN-NOTES.md, "The cluster secret").
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

#include "result.hpp"

namespace fg {

struct BusCounters {
  std::atomic<uint64_t> refused_unsealed{0};  // no seal (or garbage)
  std::atomic<uint64_t> refused_bad_mac{0};   // a secret this node does not hold, or altered
  std::atomic<uint64_t> refused_stale{0};     // sent too long ago (or its clock is far off)
  std::atomic<uint64_t> refused_replay{0};    // seen already
  std::atomic<uint64_t> refused_peer{0};      // peer-link connections without the secret
  std::atomic<uint64_t> refused_receiver{0};  // gossip addressed to another node
};

// The non-blank lines of a file holding secrets (the cluster secret, the admin token),
// surrounding white space dropped; or why it cannot be read.
Result<std::vector<std::string>> read_secret_lines(const std::string& path,
                                                   const std::string& what);

// One peer link's frame keys, a key per direction: every frame sent carries the first 16
// bytes of HMAC-SHA256(send key, its number on the link (8 bytes) || its payload), and
// every frame received must carry the like under the receive key with the next number. So
// a frame cannot be altered, dropped, replayed, reordered or moved to another link without
// the receiver hanging up. Inactive (no keys: no secret, TLS, or a legacy link): no tags.
class PeerFrameKeys {
 public:
  static constexpr size_t kTagBytes = 16;
  PeerFrameKeys();
  ~PeerFrameKeys();
  PeerFrameKeys(const PeerFrameKeys&) = delete;
  PeerFrameKeys& operator=(const PeerFrameKeys&) = delete;
  // `secret`: the id of the secret they come from (see BusKey::holds). Empty keys: none.
  void set(std::string send_key, std::string receive_key, uint32_t secret = 0);
  bool active() const { return send_ != nullptr; }
  uint32_t secret() const { return secret_; }
  // The BusKey generation these keys were last found current at (BusKey::generation).
  uint64_t checked_at = 0;
  // Appends the tag of the next frame sent, whose payload is `payload`.
  void tag(std::string_view payload, std::string& out);
  // Whether `tag` is the next received frame's for `payload`.
  bool check(std::string_view payload, std::string_view tag);

 private:
  struct Mac;  // an HMAC-SHA256 context keyed once (a frame's tag re-keys nothing)
  std::unique_ptr<Mac> send_, receive_;
  uint64_t sent_ = 0, received_ = 0;
  uint32_t secret_ = 0;
};

class BusKey {
 public:
  static constexpr size_t kMinSecret = 16;
  static constexpr int64_t kWindowMs = 60'000;  // how far a sender's clock may be off

  // `now_ms`: the wall clock (tests pass their own).
  explicit BusKey(std::function<int64_t()> now_ms);

  // The secrets: the first seals, both are accepted; false (and nothing changes) if the
  // first is missing or one is shorter than kMinSecret.
  Status set(const std::vector<std::string>& secrets);
  bool active() const;
  // Counts the calls to set() that changed the secrets: a link keyed before a change asks
  // holds() whether its secret is still one of them.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  bool holds(uint32_t secret_id) const;

  // `payload` sealed with the first secret.
  std::string seal(std::string_view payload);
  // The payload of a sealed datagram (a view into it), or nullopt (counted) if it is not
  // to be believed.
  std::optional<std::string_view> open(std::string_view datagram);

  // The peer-link handshake, before any frame (gossip/DESIGN-NOTES.md, "The cluster secret"). The
  // connecting side sends a hello: a fresh nonce, its clock and the name of the node it
  // dialled, MAC'd with the first secret. The accepting side checks it (a secret it holds,
  // a fresh clock, a nonce not believed before, its own name) and answers with a nonce of
  // its own and a MAC over both; the connecting side checks that answer. Both then derive a
  // key per direction from the secret, the hello and the answer's nonce, and every frame on
  // the link carries a tag under its direction's key (PeerFrameKeys). A hello recorded on
  // its way to one node is refused by another, and one sent again to the same node is
  // refused there; were it believed, its sender's keys would still be out of reach.
  static constexpr size_t kHelloBytes = 64;
  static constexpr size_t kAnswerBytes = 36;
  // The previous handshake (FGP1: a hello without the receiver's name or frame keys, the
  // proof a MAC of it), spoken and accepted only with set_legacy(true), for a rolling
  // upgrade from nodes that know nothing else.
  static constexpr size_t kLegacyHelloBytes = 48;
  static constexpr size_t kLegacyProofBytes = 20;
  static constexpr size_t kMagicBytes = 4;

  // The names other nodes dial this node by ("host:port", its announced bus address); a
  // hello naming another is refused. Empty (the default): any name is accepted.
  void set_names(std::vector<std::string> names);
  // Whether previous-version nodes are spoken to and believed (cluster-bus-legacy).
  void set_legacy(bool on) { legacy_.store(on, std::memory_order_relaxed); }
  bool legacy() const { return legacy_.load(std::memory_order_relaxed); }

  // The connecting side's hello to the node dialled as `receiver` (legacy: the old hello).
  std::string peer_hello(std::string_view receiver, bool legacy = false);
  // How many bytes a hello starting with `magic` (its first kMagicBytes) has in all; 0 when
  // it is not one this node accepts.
  size_t hello_bytes(std::string_view magic) const;
  // The accepting side: the answer to send back and, for a current hello, this side's frame
  // keys (`keys`); nullopt (counted) to hang up.
  std::optional<std::string> peer_answer(std::string_view hello, PeerFrameKeys* keys);
  // The connecting side: whether `answer` answers `hello`; its frame keys (current hello).
  bool peer_proven(std::string_view hello, std::string_view answer, PeerFrameKeys* keys) const;
  void count_refused_peer() { counters_.refused_peer.fetch_add(1, std::memory_order_relaxed); }
  void count_misaddressed() { counters_.refused_receiver.fetch_add(1, std::memory_order_relaxed); }

  const BusCounters& counters() const { return counters_; }

  // The secrets in `path`: the first line, and a second one if there is (blank lines and
  // surrounding white space ignored); or why the file cannot be read.
  static Result<std::vector<std::string>> read_file(const std::string& path);

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
  std::vector<std::string> names_;                   // SHA-256 of each name, 16 bytes
  std::atomic<bool> legacy_{false};
  std::atomic<uint64_t> generation_{1};
  uint64_t epoch_;
  uint64_t next_ = 1;
  BusCounters counters_;
};

}  // namespace fg
