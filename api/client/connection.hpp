// One TCP connection of the client to one node: calls queued while a frame is being written
// leave together in the next frame (batching), several frames ride at once (pipelining),
// answers are matched to calls by order. Reconnects with backoff; a broken connection hands
// its calls back to the client to retry. I/O thread only.
#pragma once
#include <asio.hpp>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "byte_stream.hpp"
#include "client_impl.hpp"

namespace floodgate {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  struct Flight {
    std::vector<CallPtr> calls;
    Clock::time_point sent;
  };

  Connection(Client::Impl& impl, std::string addr);
  void send(CallPtr c);
  // Gives up on the connection: its calls go back to the client (to retry elsewhere).
  void broken(const std::string& why);
  // Why a read or write on an open connection failed, with what a user can do about it.
  std::string lost(const asio::error_code& ec) const;
  // Every call it holds (for answering them when the client closes).
  void collect(std::vector<CallPtr>& out) const;
  // The oldest frame in flight, if any, and when it was sent.
  bool oldest(Clock::time_point& sent) const;

 private:
  void connect_soon();
  void connect();
  void up();  // connected (and TLS done): the hello rides with the first calls
  void flush();
  void read();
  bool parse();

  Client::Impl& impl_;
  std::string addr_;
  fg::ByteStream stream_;
  asio::ip::tcp::resolver resolver_;
  enum State { kIdle, kConnecting, kUp } state_ = kIdle;
  std::deque<CallPtr> pending_;
  std::deque<Flight> flights_;
  std::string body_, wbuf_;
  asio::steady_timer timer_;
  Clock::time_point next_connect_{};
  std::chrono::milliseconds backoff_{0};
  bool writing_ = false;
  bool answered_ = false;  // bytes came back since the connection went up
  bool flush_posted_ = false;
  bool hello_sent_ = false;
  uint64_t gen_ = 0;  // bumped when the socket is replaced: old handlers do nothing
  std::vector<char> rbuf_ = std::vector<char>(64 * 1024);
  size_t rbeg_ = 0, rend_ = 0;
  fg::wire::ServerFrameView frame_;
  fg::wire::ResultView result_;
};

}  // namespace floodgate
