// An open-loop RESP load: requests fall due at a set rate whatever the server does, and
// each one's latency is counted from when it fell due, not from when it was sent — a
// closed-loop client (redis-benchmark) sends the next request only when a reply comes, so
// a server that falls behind slows the load down and the queue it makes is never seen.
//
//   open_loop --ports [HOST:]P[,...] --conns N --rate R --seconds S [--drain D] [--keys K]
//             [--seed X] [--label L] [--incr] [--pipeline P] [--deadline MS]
//
// N connections (spread over the addresses in turn; HOST defaults to 127.0.0.1) share R
// requests a second, each connection sending its share on its own schedule: `CL.THROTTLE k:<random
// of K> 100 1000 60 1`, or with --incr `INCR k:<random of K>` (what redis-server is measured with).
// For S seconds, then up to D seconds (default 5) for the replies still owed. With --pipeline P it
// is a closed loop instead (what capacity is measured with): each connection keeps P requests
// outstanding, R is ignored, and latency counts from the send. A connection the server closes (a
// node killed) stops; the rest go on. With --deadline MS each connection first states that
// deadline (FG.DEADLINE). Prints one line:
//   label: L  offered: R  sent: N  answered: A  errors: E  unanswered: U  served_rate: X
//   p50_ms: .. p99_ms: .. max_ms: ..  closed: C
// `served_rate` counts replies that were decisions (not errors) and came within the S
// seconds; `errors` counts error replies (refusals, -BUSY); `unanswered` requests were sent
// and had no reply D seconds after the end. Single-threaded (run several for more load);
// every run stops by itself.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// The length of the first whole RESP reply in [p, end), or 0 if it is not all here yet.
size_t reply_length(const char* p, const char* end) {
  const char* start = p;
  int64_t owed = 1;  // replies still to read (an array adds its elements)
  while (owed > 0) {
    if (p >= end) return 0;
    const char type = *p;
    const char* nl = static_cast<const char*>(memchr(p, '\n', static_cast<size_t>(end - p)));
    if (!nl) return 0;
    --owed;
    if (type == '$') {
      const long n = strtol(p + 1, nullptr, 10);
      p = nl + 1;
      if (n >= 0) {
        if (end - p < n + 2) return 0;
        p += n + 2;
      }
      continue;
    }
    if (type == '*') {
      const long n = strtol(p + 1, nullptr, 10);
      if (n > 0) owed += n;
    }
    p = nl + 1;
  }
  return static_cast<size_t>(p - start);
}

struct Conn {
  int fd = -1;
  bool dead = false;             // closed by the server
  std::vector<int64_t> sent_at;  // closed loop: when each outstanding request left
  size_t sent_at_head = 0;
  int64_t interval_ns = 0;  // between two of its requests
  int64_t first_due_ns = 0;
  uint64_t sent = 0;      // requests written (their due times follow from their numbers)
  uint64_t answered = 0;  // replies read (in order)
  std::string out;        // rendered, not yet written
  size_t out_off = 0;
  std::string in;
  bool want_write = false;
  uint64_t rng = 0;
};

uint64_t next_random(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "open_loop: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

void usage() {
  std::fprintf(stderr,
               "usage: open_loop --ports [HOST:]P[,...] --conns N --rate R --seconds S [--drain D] "
               "[--keys K] [--seed X] [--label L] [--incr] [--pipeline P] [--deadline MS]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<sockaddr_in> targets;
  int pipeline = 0;  // 0: open loop
  int conns = 1;
  double rate = 1000, seconds = 5, drain = 5;
  uint64_t keys = 1000000, seed = 1;
  std::string label = "load";
  bool incr = false;
  int deadline_ms = -1;  // each connection states it first (FG.DEADLINE); -1: not
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--incr") {
      incr = true;
      continue;
    }
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "--ports") {
      std::string list = v;
      for (size_t at = 0; at <= list.size();) {
        size_t comma = list.find(',', at);
        if (comma == std::string::npos) comma = list.size();
        const std::string item = list.substr(at, comma - at);
        at = comma + 1;
        if (item.empty()) continue;
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const size_t colon = item.rfind(':');
        if (colon != std::string::npos &&
            inet_pton(AF_INET, item.substr(0, colon).c_str(), &sa.sin_addr) != 1)
          usage();
        sa.sin_port = htons(static_cast<uint16_t>(
            std::atoi(item.c_str() + (colon == std::string::npos ? 0 : colon + 1))));
        targets.push_back(sa);
      }
    } else if (a == "--pipeline") {
      pipeline = std::atoi(v);
    } else if (a == "--deadline") {
      deadline_ms = std::atoi(v);
    } else if (a == "--conns") {
      conns = std::atoi(v);
    } else if (a == "--rate") {
      rate = std::atof(v);
    } else if (a == "--seconds") {
      seconds = std::atof(v);
    } else if (a == "--drain") {
      drain = std::atof(v);
    } else if (a == "--keys") {
      keys = std::strtoull(v, nullptr, 10);
    } else if (a == "--seed") {
      seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--label") {
      label = v;
    } else {
      usage();
    }
  }
  if (targets.empty() || pipeline < 0 || conns < 1 || rate <= 0 || seconds <= 0 || seconds > 600 ||
      drain < 0 || drain > 600 || keys < 1)
    usage();

  const int ep = epoll_create1(0);
  if (ep < 0) die("epoll_create1");
  std::vector<Conn> cs(static_cast<size_t>(conns));
  const int64_t t0 = now_ns() + 100'000'000;  // (connections made first)
  const int64_t end_ns = t0 + static_cast<int64_t>(seconds * 1e9);
  const int64_t stop_ns = end_ns + static_cast<int64_t>(drain * 1e9);
  for (int i = 0; i < conns; ++i) {
    Conn& c = cs[static_cast<size_t>(i)];
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c.fd < 0) die("socket");
    sockaddr_in sa = targets[static_cast<size_t>(i) % targets.size()];
    if (connect(c.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) die("connect");
    const int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (deadline_ms >= 0) {  // (before the schedule starts; its +OK is not a reply counted)
      const std::string ms = std::to_string(deadline_ms);
      const std::string req =
          "*2\r\n$11\r\nFG.DEADLINE\r\n$" + std::to_string(ms.size()) + "\r\n" + ms + "\r\n";
      char ok[8];
      if (send(c.fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()) ||
          recv(c.fd, ok, 5, MSG_WAITALL) != 5 || std::memcmp(ok, "+OK\r\n", 5) != 0)
        die("FG.DEADLINE");
    }
    fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    c.interval_ns = static_cast<int64_t>(1e9 * conns / rate);
    // The connections' schedules are staggered over one interval, so the load is smooth.
    c.first_due_ns = t0 + c.interval_ns * i / conns;
    c.rng = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i) * 7919 + 1;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) != 0) die("epoll_ctl");
  }

  std::vector<uint32_t> latency_us;  // of every reply, in microseconds
  latency_us.reserve(static_cast<size_t>(std::min(rate * seconds, 5e7)));
  uint64_t errors = 0, served_in_time = 0, closed = 0;
  auto drop = [&](Conn& c) {
    if (c.dead) return;
    c.dead = true;
    ++closed;
    epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    c.out.clear();
    c.out_off = 0;
  };
  auto flush = [&](Conn& c) {
    while (!c.dead && c.out_off < c.out.size()) {
      const ssize_t n =
          send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return drop(c);
      }
      c.out_off += static_cast<size_t>(n);
    }
    if (c.out_off == c.out.size()) {
      c.out.clear();
      c.out_off = 0;
    }
    const bool want = !c.out.empty();
    if (want != c.want_write) {
      c.want_write = want;
      epoll_event ev{};
      ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
      ev.data.u32 = static_cast<uint32_t>(&c - cs.data());
      epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
    }
  };
  char cmd[128];
  std::vector<epoll_event> evs(256);
  char buf[1 << 16];
  for (;;) {
    const int64_t now = now_ns();
    bool owed = false;
    for (Conn& c : cs) {
      if (c.dead) continue;
      // Every request due by now (and before the end) is rendered; what the socket does
      // not take waits in `out` (its latency counts from its due time all the same). A
      // closed loop keeps `pipeline` outstanding instead.
      const int64_t upto = std::min(now, end_ns - 1);
      if (upto >= c.first_due_ns) {
        const uint64_t due =
            pipeline > 0 ? (now < end_ns ? c.answered + static_cast<uint64_t>(pipeline) : c.sent)
                         : static_cast<uint64_t>((upto - c.first_due_ns) / c.interval_ns) + 1;
        if (due > c.sent && c.out.size() < (64u << 20)) {
          for (; c.sent < due; ++c.sent) {
            char key[24];
            const int kl =
                std::snprintf(key, sizeof key, "k:%llu",
                              static_cast<unsigned long long>(next_random(c.rng) % keys));
            const int n =
                incr ? std::snprintf(cmd, sizeof cmd, "*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n", kl, key)
                     : std::snprintf(cmd, sizeof cmd,
                                     "*6\r\n$11\r\nCL.THROTTLE\r\n$%d\r\n%s\r\n$3\r\n100\r\n$4\r\n"
                                     "1000\r\n$2\r\n60\r\n$1\r\n1\r\n",
                                     kl, key);
            c.out.append(cmd, static_cast<size_t>(n));
            if (pipeline > 0) c.sent_at.push_back(now);
          }
          flush(c);
        }
      }
      if (c.answered < c.sent || now < end_ns) owed = true;
    }
    if (!owed || now >= stop_ns) break;
    // Sleep until the next request falls due (at least 20 us, at most 1 ms), or a reply.
    int64_t next_due = now + 1'000'000;
    for (const Conn& c : cs)
      if (c.out.empty() && !c.dead && pipeline == 0)
        next_due =
            std::min(next_due, c.first_due_ns + static_cast<int64_t>(c.sent) * c.interval_ns);
    const int64_t wait_ns = std::clamp<int64_t>(next_due - now, 20'000, 1'000'000);
    const timespec ts{0, static_cast<long>(wait_ns)};
    const int n = epoll_pwait2(ep, evs.data(), static_cast<int>(evs.size()), &ts, nullptr);
    for (int k = 0; k < n; ++k) {
      Conn& c = cs[evs[static_cast<size_t>(k)].data.u32];
      if (c.dead) continue;
      if (evs[static_cast<size_t>(k)].events & EPOLLOUT) flush(c);
      if (c.dead) continue;
      if (!(evs[static_cast<size_t>(k)].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      const ssize_t got = recv(c.fd, buf, sizeof buf, 0);
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (got <= 0) {
        drop(c);
        continue;
      }
      c.in.append(buf, static_cast<size_t>(got));
      const int64_t at = now_ns();
      size_t off = 0;
      while (off < c.in.size()) {
        const size_t len = reply_length(c.in.data() + off, c.in.data() + c.in.size());
        if (len == 0) break;
        const int64_t due = pipeline > 0
                                ? c.sent_at[c.sent_at_head++]
                                : c.first_due_ns + static_cast<int64_t>(c.answered) * c.interval_ns;
        latency_us.push_back(static_cast<uint32_t>(std::max<int64_t>(0, at - due) / 1000));
        if (c.in[off] == '-') {
          ++errors;
        } else if (at < end_ns) {
          ++served_in_time;
        }
        ++c.answered;
        off += len;
      }
      c.in.erase(0, off);
      if (c.sent_at_head > 4096) {
        c.sent_at.erase(c.sent_at.begin(), c.sent_at.begin() + static_cast<long>(c.sent_at_head));
        c.sent_at_head = 0;
      }
    }
  }
  uint64_t sent = 0, answered = 0;
  for (const Conn& c : cs) {
    sent += c.sent;
    answered += c.answered;
    if (!c.dead) close(c.fd);
  }
  auto pct = [&](double q) -> double {
    if (latency_us.empty()) return 0;
    const size_t i = std::min(latency_us.size() - 1, static_cast<size_t>(q * latency_us.size()));
    std::nth_element(latency_us.begin(), latency_us.begin() + static_cast<long>(i),
                     latency_us.end());
    return latency_us[i] / 1000.0;
  };
  const double p50 = pct(0.50), p99 = pct(0.99), mx = pct(1.0);
  std::printf(
      "label: %s  offered: %.0f  sent: %llu  answered: %llu  errors: %llu  unanswered: %llu  "
      "served_rate: %.0f  p50_ms: %.2f  p99_ms: %.2f  max_ms: %.2f  closed: %llu\n",
      label.c_str(), rate, static_cast<unsigned long long>(sent),
      static_cast<unsigned long long>(answered), static_cast<unsigned long long>(errors),
      static_cast<unsigned long long>(sent - answered), served_in_time / seconds, p50, p99, mx,
      static_cast<unsigned long long>(closed));
  return 0;
}
