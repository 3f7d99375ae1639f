// Node-to-node calls over TCP with length-prefixed Protobuf frames. Callers never block:
// a call returns at once and its callback runs on the io_context's thread with the
// answer, an error, "unavailable" (cannot connect) or "timeout" (deadline passed).
// Requests made while a frame is being written go out together in the next frame.
#pragma once
#include <asio.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "bus_key.hpp"
#include "byte_stream.hpp"
#include "peer_net.hpp"
#include "tls_context.hpp"

namespace fg {

// Past this an unanswered connect gives up and backs off, instead of waiting out the
// kernel's SYN retries (minutes) while a partition heals.
constexpr std::chrono::milliseconds kConnectTimeout{1000};
constexpr size_t kMaxPeerFrameBytes = 64 << 20;  // a receiver drops a link sending more
constexpr size_t kPeerFrameBudget = 32 << 20;    // what a sender puts in one frame, at most

// One outgoing connection to one peer, reconnecting with backoff when it drops.
class PeerClient final : public PeerLink, public std::enable_shared_from_this<PeerClient> {
 public:
  // `local_host`, when a specific address, is where the connection leaves from (the node's
  // bind address), so peers and firewalls see the same address the bus uses. `key` (may be
  // null; must outlive the client): with a secret set, each connection first proves it
  // holds it and checks the peer's proof (BusKey's peer handshake) before any call goes.
  // `tls` (may be null; must outlive the client): each connection is mutual TLS, the
  // peer's certificate checked against the CA, before the secret's handshake.
  PeerClient(asio::io_context& io, std::string addr, std::string local_host = {},
             BusKey* key = nullptr, TlsContexts* tls = nullptr);
  void call(uint32_t kind, std::string body, std::chrono::milliseconds deadline,
            PeerCallback cb) override;
  void close() override;
  // The peer was declared dead: calls waiting on it end now with kTimeout (they may have
  // run there) instead of at their deadlines, and the next call connects afresh.
  void abort_calls() override;
  const std::string& addr() const { return addr_; }
  uint64_t frames_sent() const { return frames_sent_; }

 private:
  struct Pending {
    PeerCallback cb;
    std::unique_ptr<SteadyTimer> timer;
  };
  void connect();
  void connected();
  void tls_handshake();
  void handshake();
  void secured();  // TLS (if any) done: the secret's handshake (if any), then calls
  void backoff();
  void bind_local(const asio::ip::tcp::endpoint& to);
  void flush();
  void read_header();
  void fail_all(PeerStatus st);
  void finish(uint64_t id, PeerStatus st, std::string body);

  asio::io_context& io_;
  std::string addr_;
  std::string local_host_;
  BusKey* key_;
  TlsContexts* tls_;
  std::string hello_, proof_;
  PeerFrameKeys frames_;  // this connection's, from its handshake
  bool legacy_ = false;   // speak the previous version's handshake (see handshake())
  ByteStream stream_;
  SteadyTimer backoff_timer_;
  SteadyTimer connect_timer_;  // a SYN nobody answers fails after kConnectTimeout
  enum class State { kIdle, kConnecting, kConnected, kBackoff } state_ = State::kIdle;
  std::chrono::milliseconds backoff_{50};
  std::deque<std::pair<uint64_t, std::pair<uint32_t, std::string>>> outbox_;
  std::map<uint64_t, Pending> pending_;
  std::string wbuf_;
  bool writing_ = false;
  char header_[4];
  std::string rbuf_;
  uint64_t next_id_ = 1;
  uint64_t frames_sent_ = 0;
  bool closed_ = false;
};

// Accepts peer connections and hands each request to `handler`, which answers through
// `respond` (now or later, on the io_context's thread).
class PeerServer final : public PeerListener {
 public:
  using Respond = PeerRespond;
  using Handler = PeerHandler;

  // `key` (may be null; must outlive the server): with a secret set, a connection is
  // served only after its hello proves it holds the secret; others are closed, counted.
  // `tls` (may be null; must outlive the server): connections are mutual TLS, the
  // caller's certificate checked against the CA whatever tls-auth-clients says.
  PeerServer(asio::io_context& io, const std::string& host, uint16_t port, Handler handler,
             BusKey* key = nullptr, TlsContexts* tls = nullptr);
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  void close() override;

 private:
  class Conn;
  void accept();
  asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<Handler> handler_;  // shared with live connections, which may outlive us
  BusKey* key_;
  TlsContexts* tls_;
};

// A peer link's TLS handshake failed: counted, and logged sparsely.
void count_peer_tls_failure(TlsContexts* tls, const std::string& who, const asio::error_code& ec);

}  // namespace fg
