// A WebSocket-style chat server (one TCP connection per session, one line per message)
// showing Floodgate's two everyday limits for long-lived connections:
//   - at most 3 open connections per user: a lease per connection, kept alive by a
//     floodgate::Holder for this server and given back when the connection closes (or,
//     if this server crashes, when the lease's TTL runs out);
//   - at most 5 messages per second per connection (burst 5): a token bucket per connection.
// A limited client is answered with a retry-after, never silently dropped.
//
//   ws_server --port 9000 --seeds 127.0.0.1:7380 [--server-id chat-1]
//   client:  HELLO <user>      -> WELCOME <conn-id>   |  BUSY retry_after_ms=<n> (then closed)
//            MSG <text>        -> OK <remaining>      |  SLOW retry_after_ms=<n>
#include <asio.hpp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "floodgate/client.hpp"

namespace {

constexpr int kConnectionsPerUser = 3;
constexpr int64_t kLeaseTtlMs = 15'000;
const floodgate::Limit kMessages = floodgate::Limit::token_bucket(5, 5, 1000);

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(asio::ip::tcp::socket s, floodgate::Client& fg, floodgate::Holder& holder, uint64_t id)
      : sock_(std::move(s)), fg_(fg), holder_(holder), id_(id) {}

  ~Session() {
    if (lease_.granted) holder_.release(lease_, [](floodgate::Result<bool>) {});
  }

  void start() { read(); }

 private:
  void read() {
    asio::async_read_until(
        sock_, buf_, '\n', [self = shared_from_this()](asio::error_code ec, size_t n) {
          if (ec) return;  // closed: the destructor gives the lease back
          std::string line(asio::buffers_begin(self->buf_.data()),
                           asio::buffers_begin(self->buf_.data()) + static_cast<long>(n));
          self->buf_.consume(n);
          while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
          self->handle(line);
        });
  }

  // Floodgate answers on its own thread: hop back to this connection's executor.
  template <class F>
  void on_io(F&& f) {
    asio::post(sock_.get_executor(), std::forward<F>(f));
  }

  void handle(const std::string& line) {
    auto self = shared_from_this();
    if (user_.empty()) {
      if (line.rfind("HELLO ", 0) != 0 || line.size() == 6)
        return reply("ERR say HELLO <user> first", false);
      user_ = line.substr(6);
      holder_.acquire("conns:" + user_,
                      floodgate::Limit::concurrency(kConnectionsPerUser, kLeaseTtlMs),
                      [self](floodgate::Result<floodgate::Lease> r) {
                        self->on_io([self, r = std::move(r)] {
                          if (!r.ok()) return self->reply("ERR " + r.error(), false);
                          if (!r->granted) {
                            return self->reply(
                                "BUSY retry_after_ms=" + std::to_string(r->retry_after_ms), false);
                          }
                          self->lease_ = *r;
                          self->reply("WELCOME " + std::to_string(self->id_), true);
                        });
                      });
      return;
    }
    if (line.rfind("MSG ", 0) != 0) return reply("ERR expected MSG <text>", true);
    fg_.take("msgs:conn:" + std::to_string(id_), kMessages, 1,
             [self](floodgate::Result<floodgate::Decision> d) {
               self->on_io([self, d = std::move(d)] {
                 if (!d.ok()) return self->reply("OK unlimited (" + d.error() + ")", true);
                 if (!d->allowed) {
                   return self->reply("SLOW retry_after_ms=" + std::to_string(d->retry_after_ms),
                                      true);
                 }
                 self->reply("OK " + std::to_string(d->remaining), true);
               });
             });
  }

  void reply(std::string text, bool keep_open) {
    auto msg = std::make_shared<std::string>(std::move(text) + "\n");
    asio::async_write(sock_, asio::buffer(*msg),
                      [self = shared_from_this(), msg, keep_open](asio::error_code ec, size_t) {
                        if (ec) return;
                        if (keep_open) return self->read();
                        asio::error_code ignored;
                        self->sock_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
                      });
  }

  asio::ip::tcp::socket sock_;
  asio::streambuf buf_;
  floodgate::Client& fg_;
  floodgate::Holder& holder_;
  uint64_t id_;
  std::string user_;
  floodgate::Lease lease_;
};

}  // namespace

int main(int argc, char** argv) {
  int port = 9000;
  std::string seeds = "127.0.0.1:7380", server_id = "chat-" + std::to_string(::getpid());
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--port")) port = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seeds")) seeds = argv[i + 1];
    if (!std::strcmp(argv[i], "--server-id")) server_id = argv[i + 1];
  }
  floodgate::Client::Options opt;
  opt.seeds = {seeds};
  opt.deadline = std::chrono::milliseconds(1000);
  floodgate::Client fg(opt);
  // This server's leases, renewed every TTL/3 while it runs and released when it stops.
  floodgate::Holder holder(fg, server_id, std::chrono::milliseconds(kLeaseTtlMs));

  asio::io_context io;
  asio::ip::tcp::acceptor acc(io,
                              {asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)});
  uint64_t next_id = 1;
  std::function<void()> accept = [&] {
    acc.async_accept([&](asio::error_code ec, asio::ip::tcp::socket s) {
      if (!ec) std::make_shared<Session>(std::move(s), fg, holder, next_id++)->start();
      accept();
    });
  };
  accept();
  asio::signal_set stop(io, SIGINT, SIGTERM);
  stop.async_wait([&](asio::error_code, int) { io.stop(); });
  std::printf("ws_server listening on 127.0.0.1:%d as %s (Floodgate at %s)\n", port,
              server_id.c_str(), seeds.c_str());
  std::fflush(stdout);
  io.run();
  return 0;  // ~Holder releases whatever leases are still held
}
