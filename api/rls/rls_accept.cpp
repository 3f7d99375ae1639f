// The gateway door's acceptor (plain gRPC): each connection is held until it begins — its
// first bytes, the HTTP/2 preface — within the handshake deadline, then handed to gRPC; at
// most rls-maxclients are open at once. gRPC owns a connection once it has it and says
// nothing when it closes one, so the door keeps each one's socket number and inode, and a
// socket whose number is closed or now names another socket is gone. Each connection is one
// of the node's clients from its accept to then (CLIENT LIST's door=rls; maxclients counts
// it: past it, a new one is closed at once). CLIENT KILL wakes the acceptor (an eventfd),
// which shuts the chosen sockets down: gRPC sees them end and lets them go.
#include <arpa/inet.h>
#include <grpc/grpc_posix.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "client_registry.hpp"
#include "rls_config.hpp"
#include "rls_door.hpp"
#include "services.hpp"

namespace fg {

namespace {

int64_t mono_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr int64_t kSweepMs = 1000;  // how often the connections gRPC has are looked at

struct Waiting {  // accepted, not yet begun
  int fd;
  int64_t until_ms;
  std::shared_ptr<ClientInfo> client;  // in the client registry
};
struct Handed {  // gRPC's
  int fd;
  ino_t ino;
  std::shared_ptr<ClientInfo> client;
};

// A socket's address, or its peer's, as CLIENT LIST writes one ("127.0.0.1:52100").
std::string address_of(int fd, bool peer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  auto* sa = reinterpret_cast<sockaddr*>(&ss);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return "?:0";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  } else if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace

void RlsDoor::accept_loop() {
  RlsStatsBook& stats = rules_.stats();
  std::vector<Waiting> waiting;
  std::vector<Handed> handed;
  std::vector<pollfd> fds;
  int64_t swept_ms = 0;
  auto sweep = [&] {
    handed.erase(std::remove_if(handed.begin(), handed.end(),
                                [this](const Handed& h) {
                                  struct stat st {};
                                  const bool gone = ::fstat(h.fd, &st) != 0 || st.st_ino != h.ino;
                                  if (gone) svc_.clients->remove(h.client->id);
                                  return gone;
                                }),
                 handed.end());
    swept_ms = mono_ms();
  };
  auto hand = [&](const Waiting& w) {
    struct stat st {};
    if (::fstat(w.fd, &st) == 0) {
      handed.push_back({w.fd, st.st_ino, w.client});
    } else {
      svc_.clients->remove(w.client->id);
    }
    grpc_server_add_channel_from_fd(server_, w.fd, plain_creds_);
  };
  // Those CLIENT KILL chose: one still silent is closed; gRPC's is shut down (gRPC closes
  // it on seeing it end), unless its number already names another socket.
  auto kill_chosen = [&] {
    uint64_t count;
    while (::read(kill_fd_, &count, sizeof count) > 0) {
    }
    auto chosen = [](const auto& e) { return e.client->killed.load(std::memory_order_relaxed); };
    for (const Waiting& w : waiting) {
      if (!chosen(w)) continue;
      svc_.clients->remove(w.client->id);
      ::close(w.fd);
    }
    for (const Handed& h : handed) {
      if (!chosen(h)) continue;
      struct stat st {};
      if (::fstat(h.fd, &st) == 0 && st.st_ino == h.ino) ::shutdown(h.fd, SHUT_RDWR);
      svc_.clients->remove(h.client->id);
    }
    waiting.erase(std::remove_if(waiting.begin(), waiting.end(), chosen), waiting.end());
    handed.erase(std::remove_if(handed.begin(), handed.end(), chosen), handed.end());
  };
  while (!stopping_.load()) {
    fds.clear();
    fds.push_back({listen_fd_, POLLIN, 0});
    fds.push_back({kill_fd_, POLLIN, 0});
    int64_t now = mono_ms();
    int64_t wait_ms = kSweepMs;
    for (const Waiting& w : waiting) {
      fds.push_back({w.fd, POLLIN, 0});
      wait_ms = std::min(wait_ms, std::max<int64_t>(0, w.until_ms - now));
    }
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(wait_ms));
    if (stopping_.load()) break;
    if (n < 0 && errno != EINTR) {
      spdlog::warn("gateway door: poll: {}", std::strerror(errno));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    now = mono_ms();
    // Those that began go to gRPC; those still silent past the deadline are closed.
    size_t kept = 0;
    for (size_t i = 0; i < waiting.size(); ++i) {
      const short ev = fds[i + 2].revents;
      if (ev & (POLLIN | POLLHUP | POLLERR)) {
        hand(waiting[i]);
      } else if (now >= waiting[i].until_ms) {
        svc_.clients->remove(waiting[i].client->id);
        ::close(waiting[i].fd);
        stats.handshake_timeouts.fetch_add(1, std::memory_order_relaxed);
      } else {
        waiting[kept++] = waiting[i];
      }
    }
    waiting.resize(kept);
    if (fds[1].revents & POLLIN) kill_chosen();
    if (fds[0].revents & POLLIN) {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno != EAGAIN && errno != EWOULDBLOCK) {
            // Out of descriptors or memory: the connection waits in the backlog a moment.
            spdlog::warn("gateway door: accept: {}", std::strerror(errno));
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          break;
        }
        if (waiting.size() + handed.size() >= static_cast<size_t>(options_.max_clients)) sweep();
        if (waiting.size() + handed.size() >= static_cast<size_t>(options_.max_clients)) {
          ::close(fd);  // (at rls-maxclients: refused at once, as RESP's maxclients)
          stats.connections_refused.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        // One of the node's clients (maxclients counts every door's).
        const auto client = svc_.clients->add(address_of(fd, true), address_of(fd, false),
                                              svc_.clock->now_ns() / 1'000'000, "rls");
        if (!client) {
          ::close(fd);
          stats.connections_refused.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        svc_.clients->set_wake(*client, [kill_fd = kill_fd_] {
          const uint64_t one = 1;
          (void)!::write(kill_fd, &one, sizeof one);
        });
        waiting.push_back({fd, now + options_.handshake_ms, client});
      }
    }
    if (now - swept_ms >= kSweepMs) sweep();
    stats.connections.store(static_cast<int64_t>(waiting.size() + handed.size()),
                            std::memory_order_relaxed);
  }
  for (const Waiting& w : waiting) {
    svc_.clients->remove(w.client->id);
    ::close(w.fd);
  }
  for (const Handed& h : handed) svc_.clients->remove(h.client->id);
}

}  // namespace fg
