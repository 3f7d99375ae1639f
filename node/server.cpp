// Accept loop and I/O thread pool.
#include "server.hpp"

#include <spdlog/spdlog.h>

#include <sstream>

#include "gateway_door.hpp"
#include "grpc_session.hpp"
#include "native_session.hpp"
#include "resp_session.hpp"

namespace fg {

Server::Server(Services& svc, std::shared_ptr<const ConnectionLimits> limits, int io_threads,
               bool polled)
    : svc_(svc), limits_(std::move(limits)), polled_(polled) {
  for (int i = 0; i < io_threads; ++i) {
    contexts_.push_back(std::make_unique<asio::io_context>(1));
    guards_.push_back(asio::make_work_guard(*contexts_.back()));
    batchers_.push_back(
        std::make_unique<IoBatcher>(*contexts_.back(), svc, svc.settings.max_batch_commands * 4));
  }
}

Server::~Server() { stop(); }

void Server::listen(const std::string& bind, int port) {
  port_ = bind_all(bind, port, DoorKind::kResp, false);
}

void Server::listen_tls(const std::string& bind, int port) {
  tls_port_ = bind_all(bind, port, DoorKind::kResp, true);
}

void Server::listen_native(const std::string& bind, int port, bool tls) {
  native_port_ = bind_all(bind, port, DoorKind::kNative, tls);
}

void Server::listen_rls(const std::string& bind, int port, bool tls) {
  rls_port_ = bind_all(bind, port, DoorKind::kGateway, tls);
}

int Server::bind_all(const std::string& bind, int port, DoorKind door, bool tls) {
  if (tls && !(tls_ && tls_->active())) throw std::runtime_error("TLS is not configured");
  if (polled_) return port;  // (a name in the in-memory networks: nothing listens)
  const size_t before = acceptors_.size();
  std::istringstream in(bind);
  std::string addr;
  while (in >> addr) {
    asio::ip::tcp::endpoint ep(asio::ip::make_address(addr), static_cast<uint16_t>(port));
    auto acc = std::make_unique<asio::ip::tcp::acceptor>(*contexts_[0]);
    acc->open(ep.protocol());
    acc->set_option(asio::ip::tcp::acceptor::reuse_address(true));
    acc->bind(ep);
    acc->listen(asio::socket_base::max_listen_connections);
    port = acc->local_endpoint().port();  // resolves port 0 for every later address too
    accept(*acc, door, tls);
    acceptors_.push_back(std::move(acc));
  }
  if (acceptors_.size() == before) throw std::runtime_error("no address to bind (--bind is empty)");
  return port;
}

void Server::accept(asio::ip::tcp::acceptor& acc, DoorKind door, bool tls) {
  const size_t k = next_++ % contexts_.size();
  asio::io_context& ctx = *contexts_[k];
  IoBatcher& batcher = *batchers_[k];
  acc.async_accept(ctx, [this, &acc, &ctx, &batcher, door, tls](asio::error_code ec,
                                                                asio::ip::tcp::socket sock) {
    if (ec == asio::error::operation_aborted) return;
    // (the context in force now: a reload changes it for later connections only; the
    // gateway door's speaks HTTP/2, which TLS names by ALPN)
    std::shared_ptr<asio::ssl::context> context = !tls                         ? nullptr
                                                  : door == DoorKind::kGateway ? tls_->h2_server()
                                                                               : tls_->server();
    if (!ec) {
      // Started on the connection's own thread: from then on only that thread touches it.
      start_connection(ctx, batcher, make_socket_stream(std::move(sock), std::move(context)), door);
    } else {
      spdlog::warn("accept failed: {}", ec.message());
    }
    accept(acc, door, tls);
  });
}

void Server::start_connection(asio::io_context& ctx, IoBatcher& batcher,
                              std::unique_ptr<ClientStream> stream, DoorKind door) {
  auto start = [&](auto conn) { asio::post(ctx, [conn] { conn->start(); }); };
  switch (door) {
    case DoorKind::kNative:
      return start(std::make_shared<ClientConnection<NativeSession>>(std::move(stream), svc_,
                                                                     limits_, batcher));
    case DoorKind::kGateway:
      if (svc_.gateway && svc_.gateway->refuse_new()) return stream->shut();  // (rls-maxclients)
      return start(std::make_shared<ClientConnection<GrpcSession>>(std::move(stream), svc_, limits_,
                                                                   batcher));
    case DoorKind::kResp:
      break;
  }
  start(std::make_shared<ClientConnection<RespSession>>(std::move(stream), svc_, limits_, batcher));
}

void Server::adopt(const std::function<std::unique_ptr<ClientStream>(asio::any_io_executor)>& make,
                   DoorKind door) {
  const size_t k = next_++ % contexts_.size();
  start_connection(*contexts_[k], *batchers_[k], make(contexts_[k]->get_executor()), door);
}

std::vector<Lane> Server::lanes() const {
  std::vector<Lane> out;
  for (size_t i = 0; i < contexts_.size(); ++i)
    out.push_back({contexts_[i].get(), batchers_[i].get()});
  return out;
}

void Server::run() {
  if (polled_) return;  // (its owner polls the loops)
  beat_ns_ = std::make_unique<std::atomic<int64_t>[]>(contexts_.size());
  for (size_t i = 0; i < contexts_.size(); ++i) {
    beats_.push_back(std::make_unique<asio::steady_timer>(*contexts_[i]));
    beat(i);
  }
  for (auto& ctx : contexts_) {
    threads_.emplace_back([c = ctx.get(), this] { run_io_loop(*c, idle_poll_, svc_.counters); });
  }
}

namespace {
int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

// A thread's heartbeat: marked by a timer on its own loop, so it stops when a handler of
// that loop does not return.
void Server::beat(size_t i) {
  beat_ns_[i].store(steady_now_ns(), std::memory_order_relaxed);
  beats_[i]->expires_after(std::chrono::milliseconds(kHeartbeatMs));
  beats_[i]->async_wait([this, i](asio::error_code ec) {
    if (!ec) beat(i);
  });
}

std::string Server::stuck_thread(int64_t bound_ms) const {
  if (!beat_ns_) return "";
  const int64_t now = steady_now_ns();
  for (size_t i = 0; i < contexts_.size(); ++i) {
    const int64_t ms = (now - beat_ns_[i].load(std::memory_order_relaxed)) / 1'000'000;
    if (ms >= bound_ms) {
      return "I/O thread " + std::to_string(i) + " has not come back to its loop for " +
             std::to_string(ms) + " ms";
    }
  }
  return "";
}

size_t Server::poll(bool (*has_ready)(asio::io_context&)) {
  size_t n = 0;
  for (auto& ctx : contexts_) {
    if (!has_ready || has_ready(*ctx)) n += ctx->poll();
  }
  return n;
}

void run_io_loop(asio::io_context& ctx, std::chrono::nanoseconds idle_poll,
                 NodeCounters& counters) {
  if (idle_poll.count() <= 0) {
    ctx.run();
    return;
  }
  using Clock = std::chrono::steady_clock;
  while (!ctx.stopped()) {
    if (ctx.poll() > 0) continue;  // (each poll: one epoll_wait that does not block)
    const Clock::time_point until = Clock::now() + idle_poll;
    bool found = false;
    while (!found && !ctx.stopped() && Clock::now() < until) found = ctx.poll() > 0;
    (found ? counters.idle_poll_hits : counters.idle_poll_misses)
        .fetch_add(1, std::memory_order_relaxed);
    if (!found) ctx.run_one();  // sleeps until there is something to run
  }
}

void Server::stop() {
  for (auto& acc : acceptors_) {
    asio::post(acc->get_executor(), [a = acc.get()] {
      asio::error_code ec;
      a->close(ec);
    });
  }
  for (auto& g : guards_) g.reset();
  for (auto& ctx : contexts_) ctx->stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace fg
