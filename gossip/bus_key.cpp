// Sealing and opening gossip datagrams with the cluster secret.
//
// A sealed datagram: "FGB1", the sealing secret's id (4 bytes), the sender's epoch (8), its
// counter (8), its wall-clock milliseconds (8), the payload, and the first 16 bytes of
// HMAC-SHA256(secret, everything before the tag). Integers are big-endian.
#include "bus_key.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <random>

namespace fg {

namespace {
constexpr char kMagic[4] = {'F', 'G', 'B', '1'};
constexpr size_t kHeader = 32;
constexpr size_t kTag = 16;

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>(v >> (8 * i) & 0xff));
}

uint64_t get_be(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | static_cast<unsigned char>(p[i]);
  return v;
}

void mac(const std::string& key, const char* data, size_t n, unsigned char* out) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data), n, md, &len);
  std::memcpy(out, md, kTag);
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}
}  // namespace

BusKey::BusKey(std::function<int64_t()> now_ms) : now_ms_(std::move(now_ms)) {
  std::random_device rd;
  epoch_ = (uint64_t{rd()} << 32) ^ rd();
}

Status BusKey::set(const std::vector<std::string>& secrets) {
  if (secrets.empty() || secrets.size() > 2) {
    return Error{"the cluster secret file must hold one secret, or two while rotating"};
  }
  std::vector<Secret> next;
  for (const std::string& s : secrets) {
    if (s.size() < kMinSecret) {
      return Error{"a cluster secret must be at least " + std::to_string(kMinSecret) +
                   " characters"};
    }
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), md);
    next.push_back({s, static_cast<uint32_t>(get_be(reinterpret_cast<const char*>(md), 4))});
  }
  std::lock_guard<std::mutex> lock(mu_);
  secrets_ = std::move(next);
  generation_.fetch_add(1, std::memory_order_release);
  return {};
}

bool BusKey::holds(uint32_t secret_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(secrets_.begin(), secrets_.end(),
                     [secret_id](const Secret& s) { return s.id == secret_id; });
}

bool BusKey::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !secrets_.empty();
}

std::string BusKey::seal(std::string_view payload) {
  std::string out;
  out.reserve(kHeader + payload.size() + kTag);
  std::lock_guard<std::mutex> lock(mu_);
  if (secrets_.empty()) return std::string(payload);
  const Secret& s = secrets_.front();
  out.append(kMagic, 4);
  put_be(out, s.id, 4);
  put_be(out, epoch_, 8);
  put_be(out, next_++, 8);
  put_be(out, static_cast<uint64_t>(now_ms_()), 8);
  out.append(payload);
  unsigned char tag[kTag];
  mac(s.key, out.data(), out.size(), tag);
  out.append(reinterpret_cast<const char*>(tag), kTag);
  return out;
}

std::optional<std::string_view> BusKey::open(std::string_view d) {
  if (d.size() < kHeader + kTag || std::memcmp(d.data(), kMagic, 4) != 0) {
    counters_.refused_unsealed.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  const auto id = static_cast<uint32_t>(get_be(d.data() + 4, 4));
  const size_t body = d.size() - kTag;
  std::lock_guard<std::mutex> lock(mu_);
  bool authentic = false;
  for (const Secret& s : secrets_) {
    if (s.id != id) continue;
    unsigned char tag[kTag];
    mac(s.key, d.data(), body, tag);
    authentic = CRYPTO_memcmp(tag, d.data() + body, kTag) == 0;
    break;
  }
  if (!authentic) {
    counters_.refused_bad_mac.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  const int64_t now = now_ms_();
  const auto sent = static_cast<int64_t>(get_be(d.data() + 24, 8));
  if (sent < now - kWindowMs || sent > now + kWindowMs) {
    counters_.refused_stale.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  if (!fresh(get_be(d.data() + 8, 8), get_be(d.data() + 16, 8), now)) {
    counters_.refused_replay.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  return d.substr(kHeader, body - kHeader);
}

bool BusKey::fresh(uint64_t epoch, uint64_t counter, int64_t now) {
  if (seen_.size() > 4096) {  // senders quiet for two windows: their datagrams are stale now
    for (auto it = seen_.begin(); it != seen_.end();) {
      it = it->second.last_ms < now - 2 * kWindowMs ? seen_.erase(it) : std::next(it);
    }
  }
  Seen& s = seen_[epoch];
  if (counter > s.top) {
    const uint64_t shift = counter - s.top;
    s.bits = shift >= 64 ? 0 : s.bits << shift;
    s.bits |= 1;  // (bit k: counter top - k was seen)
    s.top = counter;
  } else {
    const uint64_t back = s.top - counter;
    if (back >= 64 || (s.bits >> back & 1)) return false;
    s.bits |= uint64_t{1} << back;
  }
  s.last_ms = now;
  return true;
}

namespace {
constexpr char kPeerMagic[4] = {'F', 'G', 'P', '2'};
constexpr char kLegacyMagic[4] = {'F', 'G', 'P', '1'};
constexpr size_t kNonce = 16;
// The current hello: magic (4), secret id (4), nonce (16), clock (8), receiver (16), tag (16).
constexpr size_t kHelloReceiverAt = 32;
constexpr size_t kHelloTagAt = 48;
// The answer: magic (4), nonce (16), tag (16).

// A legacy MAC: over a role word and the hello's first 32 bytes.
void legacy_mac(const std::string& key, std::string_view role, std::string_view hello32,
                unsigned char* out) {
  std::string in(role);
  in.append(hello32.substr(0, 32));
  mac(key, in.data(), in.size(), out);
}

// A MAC over a role word and some parts, the full 32 bytes of HMAC-SHA256.
std::string mac_of(std::string_view key, std::initializer_list<std::string_view> parts) {
  std::string in;
  for (std::string_view p : parts) in.append(p);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(in.data()), in.size(), md, &len);
  return std::string(reinterpret_cast<const char*>(md), len);
}

std::string name_hash(std::string_view name) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(name.data()), name.size(), md);
  return std::string(reinterpret_cast<const char*>(md), 16);
}

std::string random_bytes(size_t n) {
  std::random_device rd;
  std::string out;
  while (out.size() < n) put_be(out, rd(), 4);
  out.resize(n);
  return out;
}

// Both sides' frame keys, from the secret, the hello and the answer's nonce; the
// connecting side sends with the first.
std::pair<std::string, std::string> frame_keys(const std::string& secret, std::string_view hello,
                                               std::string_view nonce) {
  const std::string session = mac_of(secret, {"session", hello, nonce});
  return {mac_of(session, {"from the connecting side"}),
          mac_of(session, {"from the accepting side"})};
}
}  // namespace

// A frame's tag costs one HMAC over its number and payload with a context keyed at the
// handshake: a one-shot HMAC per frame (fetching the digest, hashing the key) cost a
// forwarded request at -P 1 about a fifth of its throughput.
struct PeerFrameKeys::Mac {
  EVP_MAC_CTX* ctx = nullptr;
  explicit Mac(const std::string& key) {
    static EVP_MAC* const hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_construct_end()};
    ctx = EVP_MAC_CTX_new(hmac);
    EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params);
  }
  ~Mac() { EVP_MAC_CTX_free(ctx); }
  // The tag of frame `n` with `payload` (the context keeps its key across frames).
  void tag(uint64_t n, std::string_view payload, unsigned char* out) const {
    unsigned char be[8];
    for (int i = 0; i < 8; ++i) be[i] = static_cast<unsigned char>(n >> (56 - 8 * i));
    unsigned char md[EVP_MAX_MD_SIZE];
    size_t len = 0;
    EVP_MAC_init(ctx, nullptr, 0, nullptr);
    EVP_MAC_update(ctx, be, sizeof be);
    EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(payload.data()), payload.size());
    EVP_MAC_final(ctx, md, &len, sizeof md);
    std::memcpy(out, md, kTagBytes);
  }
};

PeerFrameKeys::PeerFrameKeys() = default;
PeerFrameKeys::~PeerFrameKeys() = default;

void PeerFrameKeys::set(std::string send_key, std::string receive_key, uint32_t secret) {
  send_ = send_key.empty() ? nullptr : std::make_unique<Mac>(send_key);
  receive_ = receive_key.empty() ? nullptr : std::make_unique<Mac>(receive_key);
  secret_ = secret;
  checked_at = 0;
  sent_ = received_ = 0;
}

void PeerFrameKeys::tag(std::string_view payload, std::string& out) {
  unsigned char t[kTagBytes];
  send_->tag(sent_++, payload, t);
  out.append(reinterpret_cast<const char*>(t), kTagBytes);
}

bool PeerFrameKeys::check(std::string_view payload, std::string_view tag) {
  if (!receive_ || tag.size() != kTagBytes) return false;
  unsigned char t[kTagBytes];
  receive_->tag(received_, payload, t);
  if (CRYPTO_memcmp(t, tag.data(), kTagBytes) != 0) return false;
  ++received_;
  return true;
}

void BusKey::set_names(std::vector<std::string> names) {
  std::vector<std::string> hashes;
  for (const std::string& n : names) hashes.push_back(name_hash(n));
  std::lock_guard<std::mutex> lock(mu_);
  names_ = std::move(hashes);
}

std::string BusKey::peer_hello(std::string_view receiver, bool legacy) {
  std::lock_guard<std::mutex> lock(mu_);
  if (secrets_.empty()) return {};
  std::string out(legacy ? kLegacyMagic : kPeerMagic, 4);
  put_be(out, secrets_.front().id, 4);
  out += random_bytes(kNonce);
  put_be(out, static_cast<uint64_t>(now_ms_()), 8);
  if (legacy) {
    unsigned char tag[kTag];
    legacy_mac(secrets_.front().key, "hello", out, tag);
    out.append(reinterpret_cast<const char*>(tag), kTag);
    return out;
  }
  out += name_hash(receiver);
  out.append(mac_of(secrets_.front().key, {"hello", out}), 0, kTag);
  return out;
}

size_t BusKey::hello_bytes(std::string_view magic) const {
  if (magic.size() != kMagicBytes) return 0;
  if (std::memcmp(magic.data(), kPeerMagic, 4) == 0) return kHelloBytes;
  if (legacy() && std::memcmp(magic.data(), kLegacyMagic, 4) == 0) return kLegacyHelloBytes;
  return 0;
}

std::optional<std::string> BusKey::peer_answer(std::string_view hello, PeerFrameKeys* keys) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool current = hello.size() == kHelloBytes && std::memcmp(hello.data(), kPeerMagic, 4) == 0;
  const bool old = !current && legacy() && hello.size() == kLegacyHelloBytes &&
                   std::memcmp(hello.data(), kLegacyMagic, 4) == 0;
  const Secret* used = nullptr;
  if (current || old) {
    const auto id = static_cast<uint32_t>(get_be(hello.data() + 4, 4));
    for (const Secret& s : secrets_) {
      if (s.id != id) continue;
      if (current) {
        const std::string t = mac_of(s.key, {"hello", hello.substr(0, kHelloTagAt)});
        if (CRYPTO_memcmp(t.data(), hello.data() + kHelloTagAt, kTag) == 0) used = &s;
      } else {
        unsigned char tag[kTag];
        legacy_mac(s.key, "hello", hello, tag);
        if (CRYPTO_memcmp(tag, hello.data() + 32, kTag) == 0) used = &s;
      }
      break;
    }
  }
  const int64_t now = now_ms_();
  const auto sent = used ? static_cast<int64_t>(get_be(hello.data() + 24, 8)) : 0;
  bool named = true;  // (the node it dialled is this one)
  if (used && current && !names_.empty()) {
    const std::string_view receiver = hello.substr(kHelloReceiverAt, 16);
    named = std::any_of(names_.begin(), names_.end(), [&](const std::string& n) {
      return CRYPTO_memcmp(n.data(), receiver.data(), 16) == 0;
    });
  }
  if (!used || !named || sent < now - kWindowMs || sent > now + kWindowMs) {
    counters_.refused_peer.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  if (hellos_.size() > 4096) {
    for (auto it = hellos_.begin(); it != hellos_.end();) {
      it = it->second < now - 2 * kWindowMs ? hellos_.erase(it) : std::next(it);
    }
  }
  if (!hellos_.emplace(std::string(hello.substr(8, kNonce)), now).second) {  // a recorded hello
    counters_.refused_peer.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  if (old) {
    std::string proof(kLegacyMagic, 4);
    unsigned char tag[kTag];
    legacy_mac(used->key, "proof", hello, tag);
    proof.append(reinterpret_cast<const char*>(tag), kTag);
    if (keys) keys->set({}, {});
    return proof;
  }
  const std::string nonce = random_bytes(kNonce);
  std::string answer(kPeerMagic, 4);
  answer += nonce;
  answer.append(mac_of(used->key, {"answer", hello, nonce}), 0, kTag);
  if (keys) {
    auto [to_server, to_client] = frame_keys(used->key, hello, nonce);
    keys->set(std::move(to_client), std::move(to_server), used->id);
  }
  return answer;
}

bool BusKey::peer_proven(std::string_view hello, std::string_view answer,
                         PeerFrameKeys* keys) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (hello.size() == kLegacyHelloBytes && std::memcmp(hello.data(), kLegacyMagic, 4) == 0) {
    if (answer.size() != kLegacyProofBytes || std::memcmp(answer.data(), kLegacyMagic, 4) != 0) {
      return false;
    }
    for (const Secret& s : secrets_) {
      unsigned char tag[kTag];
      legacy_mac(s.key, "proof", hello, tag);
      if (CRYPTO_memcmp(tag, answer.data() + 4, kTag) == 0) {
        if (keys) keys->set({}, {});
        return true;
      }
    }
    return false;
  }
  if (hello.size() != kHelloBytes || answer.size() != kAnswerBytes ||
      std::memcmp(answer.data(), kPeerMagic, 4) != 0) {
    return false;
  }
  const std::string_view nonce = answer.substr(4, kNonce);
  const auto id = static_cast<uint32_t>(get_be(hello.data() + 4, 4));
  for (const Secret& s : secrets_) {  // (the one the hello was made with; rotation may have
    if (s.id != id) continue;         // moved it to second place since)
    const std::string t = mac_of(s.key, {"answer", hello, nonce});
    if (CRYPTO_memcmp(t.data(), answer.data() + 4 + kNonce, kTag) != 0) return false;
    if (keys) {
      auto [to_server, to_client] = frame_keys(s.key, hello, nonce);
      keys->set(std::move(to_server), std::move(to_client), s.id);
    }
    return true;
  }
  return false;
}

Result<std::vector<std::string>> BusKey::read_file(const std::string& path) {
  return read_secret_lines(path, "cluster secret");
}

Result<std::vector<std::string>> read_secret_lines(const std::string& path,
                                                   const std::string& what) {
  std::ifstream in(path);
  if (!in) return Error{"cannot read the " + what + " file " + path};
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace fg
