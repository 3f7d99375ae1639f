// Push-pull of whole books between nodes whose digests differ.
#include "book_sync.hpp"

#include <spdlog/spdlog.h>

namespace fg {

namespace {
constexpr auto kDeadline = std::chrono::milliseconds(2000);
constexpr int64_t kAdvertGapMs = 100;  // one advert-started exchange per peer per gap
}  // namespace

void BookSync::on_advert(const std::string& addr, uint64_t digest, int64_t now_ms) {
  if (digest == book_.digest()) return;
  Peer& p = peers_[addr];
  if (p.in_flight || now_ms - p.last_ms < kAdvertGapMs) return;
  p.last_ms = now_ms;
  exchange(addr);
}

void BookSync::on_request(const std::string& body, PeerServer::Respond respond) {
  BookEntries in;
  if (!Book::decode(body, in)) return respond(PeerStatus::kError, {}, "malformed book");
  if (book_.merge(in)) merged_digest_ = book_.digest();
  respond(PeerStatus::kOk, Book::encode(book_.entries()), {});
}

void BookSync::on_change(const std::vector<std::string>& live) {
  const uint64_t d = book_.digest();
  if (d == merged_digest_) return;  // what a merge brought: the digests spread it
  merged_digest_ = d;               // push each local state once
  for (const auto& addr : live) exchange(addr);
}

void BookSync::exchange(const std::string& addr) {
  Peer& p = peers_[addr];
  if (p.in_flight) {
    p.again = true;
    return;
  }
  p.in_flight = true;
  call_(addr, kPeerBook, Book::encode(book_.entries()), kDeadline,
        [this, addr](PeerStatus st, std::string body) {
          Peer& p = peers_[addr];
          p.in_flight = false;
          if (st == PeerStatus::kOk) merge(body);
          if (p.again) {
            p.again = false;
            exchange(addr);
          }
        });
}

void BookSync::merge(const std::string& body) {
  BookEntries in;
  if (!Book::decode(body, in)) {
    spdlog::warn("a peer answered a malformed settings book");
    return;
  }
  if (book_.merge(in)) merged_digest_ = book_.digest();
}

}  // namespace fg
