// Admin HTTP: the routes (health, readiness, metrics, cluster JSON, status JSON, the page)
// and the small HTTP/1.1 server that carries them, one request per connection.
#include "admin_http.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "bus_key.hpp"
#include "cluster.hpp"
#include "history.hpp"
#include "json_text.hpp"
#include "policy_ids.hpp"
#include "request_metrics.hpp"
#include "services.hpp"
#include "status_page.hpp"

namespace fg {

AdminHttp::AdminHttp(Services& svc, Cluster* cluster, AdminCounters& counters, AdminLimits limits)
    : svc_(svc), cluster_(cluster), counters_(counters), limits_(limits) {}

Result<std::string> read_admin_token(const std::string& path) {
  const auto lines = read_secret_lines(path, "admin token");
  if (!lines) return Error{lines.error()};
  if (lines->empty()) return Error{"the admin token file " + path + " holds no token"};
  return lines->front();
}

void AdminHttp::set_token(std::string token) {
  std::lock_guard<std::mutex> lock(token_mu_);
  token_ = std::move(token);
}

bool AdminHttp::has_token() const {
  std::lock_guard<std::mutex> lock(token_mu_);
  return !token_.empty();
}

bool AdminHttp::allowed(std::string_view auth) const {
  std::string token;
  {
    std::lock_guard<std::mutex> lock(token_mu_);
    if (token_.empty()) return true;
    token = token_;
  }
  const std::string want = "Bearer " + token;
  // (compared in time that does not depend on where the first difference is)
  bool same = auth.size() == want.size();
  unsigned char diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff |= static_cast<unsigned char>(want[i] ^ (i < auth.size() ? auth[i] : 0));
  }
  same = same && diff == 0;
  if (!same) {
    const uint64_t n = counters_.refused.fetch_add(1, std::memory_order_relaxed);
    if ((n & (n + 1)) == 0) {  // (the 1st, 2nd, 4th, 8th... refusal: not one line per request)
      spdlog::warn("admin HTTP: {} request(s) refused without the bearer token", n + 1);
    }
  }
  return same;
}

AdminHttp::~AdminHttp() { stop(); }

// (an unhealthy node is not ready either: a stuck thread serves none of its clients)
std::string AdminHttp::not_ready() const {
  if (health_) {
    if (std::string why = health_(); !why.empty()) return why;
  }
  if (cluster_) {  // (a leaving node says how far its leave is, and what it waits for)
    if (std::string why = cluster_->leave_status(); !why.empty()) return why;
  }
  return node_not_ready(svc_);
}

std::string node_not_ready(const Services& svc) {
  if (!svc.routing) return "";
  auto rt = svc.routing->get();
  if (rt->epoch == 0) return "no slot table yet (joining)";
  if (rt->self_index < 0 || !rt->self().in_table) return "not in the slot table yet";
  if (!rt->quorum) return "cut off from most of the cluster";
  if (rt->awaiting.any()) {
    return std::to_string(rt->awaiting.count()) + " slots' state still arriving";
  }
  return "";
}

std::string AdminHttp::cluster_json() const {
  std::string j = "{";
  j += "\"version\":" + json_str(svc_.settings.version);
  j += ",\"resp_port\":" + std::to_string(svc_.settings.port);
  j += ",\"native_port\":" + std::to_string(svc_.settings.native_port);
  j += ",\"ready\":" + std::string(not_ready().empty() ? "true" : "false");
  j += ",\"cluster_enabled\":" + std::string(svc_.routing ? "true" : "false");
  auto ps = svc_.policies->snapshot();
  j += ",\"policies\":" + std::to_string(ps->policies.size());
  if (!svc_.routing) {
    j += ",\"members\":[{\"id\":\"standalone\",\"self\":true,\"state\":\"alive\",\"slots\":" +
         std::to_string(kSlotCount) +
         ","
         "\"host\":" +
         json_str(svc_.settings.bind) + ",\"port\":" + std::to_string(svc_.settings.port) +
         ",\"ranges\":[[0," + std::to_string(kSlotCount - 1) + "]]}]}";
    return j;
  }
  auto rt = svc_.routing->get();
  j += ",\"epoch\":" + std::to_string(rt->epoch);
  j += ",\"quorum\":" + std::string(rt->quorum ? "true" : "false");
  j += ",\"replicas\":" + std::to_string(rt->replicas);
  if (rt->self_index >= 0) j += ",\"self\":" + json_str(rt->self().id);
  std::vector<size_t> slots(rt->nodes.size(), 0);
  for (uint32_t s = 0; s < kSlotCount; ++s)
    if (rt->owner[s] < slots.size()) ++slots[rt->owner[s]];
  j += ",\"members\":[";
  for (size_t i = 0; i < rt->nodes.size(); ++i) {
    const RouteNode& n = rt->nodes[i];
    if (i) j += ",";
    j += "{\"id\":" + json_str(n.id);
    j += ",\"host\":" + json_str(n.resp_host);
    j += ",\"port\":" + std::to_string(n.resp_port);
    j += ",\"native_port\":" + std::to_string(n.native_port);
    j += ",\"bus\":" + json_str(n.peer_addr);
    j += ",\"state\":" + json_str(n.self ? "alive" : state_name(n.state));
    j += ",\"self\":" + std::string(n.self ? "true" : "false");
    j += ",\"in_table\":" + std::string(n.in_table ? "true" : "false");
    j += ",\"slots\":" + std::to_string(slots[i]);
    j += ",\"ranges\":[";
    bool first = true;
    for (const SlotRange& r : rt->ranges) {
      if (r.owner != i) continue;
      j += (first ? "" : ",") + std::string("[") + std::to_string(r.first) + "," +
           std::to_string(r.last) + "]";
      first = false;
    }
    j += "]}";
  }
  return j + "]}";
}

std::string AdminHttp::status_json(bool with_keys) const {
  const auto counts = svc_.metrics->counts();
  uint64_t requests = 0, allowed = 0, denied = 0, errors = 0;
  for (const auto& r : counts.requests) {
    for (size_t k = 0; k < r.size(); ++k) requests += r[k];
    allowed += r[static_cast<size_t>(RequestResult::kAllowed)];
    denied += r[static_cast<size_t>(RequestResult::kDenied)];
    errors += r[static_cast<size_t>(RequestResult::kError)];
  }
  const int64_t now_ns = svc_.clock->now_ns();
  std::string j = "{\"time_ms\":" + std::to_string(now_ns / 1'000'000);
  j += ",\"uptime_s\":" + std::to_string(now_ns / 1'000'000'000 - svc_.settings.start_ms / 1000);
  j += ",\"requests\":" + std::to_string(requests);
  j += ",\"allowed\":" + std::to_string(allowed);
  j += ",\"denied\":" + std::to_string(denied);
  j += ",\"errors\":" + std::to_string(errors);
  j += ",\"keys\":" + std::to_string(svc_.shards->keys());
  j += ",\"leases\":" + std::to_string(svc_.shards->leases());
  j += ",\"clients\":" + std::to_string(svc_.clients->count());
  j += ",\"policy_digest\":\"" + std::to_string(svc_.policies->snapshot()->digest) + "\"";
  // Shadow policies' would-be denials: those in shadow mode now, and any that denied in
  // shadow mode before.
  j += ",\"shadow\":[";
  bool first_shadow = true;
  for (const NodeReport::Shadow& p : shadow_policies(svc_, counts)) {
    j += (first_shadow ? "" : ",") + std::string("{\"policy\":") + json_str(p.policy) +
         ",\"shadow\":" + (p.now ? "true" : "false") +
         ",\"would_deny\":" + std::to_string(p.would_deny) + "}";
    first_shadow = false;
  }
  j += "]";
  if (!with_keys) return j + ",\"keys_hidden\":true,\"top_denied\":[]}";
  j += ",\"top_denied\":[";
  bool first = true;
  for (const auto& d : svc_.metrics->top_denied(10, now_ns / 1'000'000'000)) {
    j += (first ? "" : ",") + std::string("{\"key\":") + json_str(d.key) +
         ",\"denials\":" + std::to_string(d.denials) + "}";
    first = false;
  }
  return j + "]}";
}

AdminHttp::Reply AdminHttp::unauthorized() {
  Reply r;
  r.status = 401;
  r.extra_headers = "WWW-Authenticate: Bearer realm=\"floodgate admin\"\r\n";
  r.body = "unauthorized: send Authorization: Bearer <admin token>\n";
  return r;
}

AdminHttp::Reply AdminHttp::answer(std::string_view method, std::string_view target,
                                   std::string_view auth, bool loopback) const {
  Reply r;
  if (method != "GET" && method != "HEAD") {
    r.status = 405;
    r.extra_headers = "Allow: GET, HEAD\r\n";
    r.body = "method not allowed\n";
    return r;
  }
  const std::string_view path = target.substr(0, target.find('?'));
  // What shows keys and the cluster's layout may want a token; probes and scrapes never do.
  auto refuse = [&r] { r = unauthorized(); };
  if (path == "/healthz") {
    const std::string why = health_ ? health_() : std::string();
    r.status = why.empty() ? 200 : 503;
    r.body = why.empty() ? "ok\n" : "unhealthy: " + why + "\n";
  } else if (path == "/readyz") {
    const std::string why = not_ready();
    r.status = why.empty() ? 200 : 503;
    r.body = why.empty() ? "ready\n" : "not ready: " + why + "\n";
  } else if (path == "/metrics") {
    r.type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics();
  } else if (path == "/cluster") {
    if (!allowed(auth)) return refuse(), r;
    r.type = "application/json";
    r.body = cluster_json();
  } else if (path == "/status") {
    if (!allowed(auth)) return refuse(), r;
    r.type = "application/json";
    // Key names go to whoever holds the token, or, with none set, to this machine only.
    r.body = status_json(has_token() || loopback);
  } else if (path == "/") {
    // (the page holds no data: it asks /cluster and /status, with the token given after
    // '#' in its address, which browsers never send to the server)
    r.type = "text/html; charset=utf-8";
    r.body = kStatusPage;
  } else {
    r.status = 404;
    r.body = "not found\n";
  }
  return r;
}

namespace {
const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

bool is_loopback(const asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback();
  }
  return a.is_loopback();
}

// The value of header `name` (lower case) in `head`, or empty.
std::string_view header(std::string_view head, std::string_view name) {
  size_t at = head.find("\r\n");
  while (at != std::string_view::npos && at + 2 < head.size()) {
    const size_t start = at + 2;
    const size_t end = head.find("\r\n", start);
    const std::string_view line = head.substr(start, end - start);
    const size_t colon = line.find(':');
    if (colon == name.size() &&
        std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) {
          return a == std::tolower(static_cast<unsigned char>(b));
        })) {
      std::string_view v = line.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      return v;
    }
    at = end;
  }
  return {};
}
}  // namespace

// One request, one reply, then the connection closes. A deadline covers the request from
// accept to its last header byte, another the reply; whichever passes closes the socket.
class AdminHttp::Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(AdminHttp& http, asio::ip::tcp::socket sock)
      : http_(http), sock_(std::move(sock)), timer_(http.io_) {}

  void start() {
    asio::error_code ec;
    const auto peer = sock_.remote_endpoint(ec);
    loopback_ = !ec && is_loopback(peer.address());
    arm(http_.limits_.request_deadline_ms);
    auto self = shared_from_this();
    asio::async_read_until(sock_, asio::dynamic_buffer(in_, http_.limits_.max_request_bytes),
                           "\r\n\r\n", [self](asio::error_code ec, size_t n) {
                             if (self->closed_) return;
                             if (ec == asio::error::not_found) return self->reply_error(431);
                             if (ec) return self->close();
                             self->handle(n);
                           });
  }
  // Still sending its request: what the cap closes first.
  bool sending() const { return !closed_ && !replying_; }
  void close() {
    if (closed_) return;
    closed_ = true;
    asio::error_code ec;
    timer_.cancel();
    sock_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    sock_.close(ec);
  }

 private:
  void arm(int64_t ms) {
    timer_.expires_after(std::chrono::milliseconds(ms));
    auto self = shared_from_this();
    timer_.async_wait([self](asio::error_code ec) {
      if (ec || self->closed_) return;
      self->http_.counters_.dropped.fetch_add(1, std::memory_order_relaxed);
      self->close();
    });
  }

  void handle(size_t n) {
    const std::string_view head(in_.data(), n);
    const std::string_view line = head.substr(0, head.find("\r\n"));
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos) return reply_error(400);
    const std::string_view method = line.substr(0, sp1);
    const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string_view auth = header(head, "authorization");
    const size_t q = target.find('?');
    if (target.substr(0, q) == "/overview" && (method == "GET" || method == "HEAD")) {
      if (!http_.allowed(auth)) return send(unauthorized(), method == "HEAD");
      auto self = shared_from_this();
      const bool head_only = method == "HEAD";
      return http_.overview(q == std::string_view::npos ? "" : target.substr(q + 1),
                            http_.has_token() || loopback_, [self, head_only](Reply r) {
                              if (!self->closed_) self->send(r, head_only);
                            });
    }
    send(http_.answer(method, target, auth, loopback_), method == "HEAD");
  }

  void reply_error(int status) {
    Reply r;
    r.status = status;
    r.body = std::string(reason(status)) + "\n";
    send(r, false);
  }

  void send(const Reply& r, bool head_only) {
    replying_ = true;
    out_ = "HTTP/1.1 " + std::to_string(r.status) + " " + reason(r.status) +
           "\r\nContent-Type: " + r.type + "\r\nContent-Length: " + std::to_string(r.body.size()) +
           "\r\nConnection: close\r\nCache-Control: no-store\r\n" + r.extra_headers + "\r\n";
    if (!head_only) out_ += r.body;
    arm(http_.limits_.reply_deadline_ms);
    auto self = shared_from_this();
    asio::async_write(sock_, asio::buffer(out_),
                      [self](asio::error_code, size_t) { self->close(); });
  }

  AdminHttp& http_;
  asio::ip::tcp::socket sock_;
  asio::steady_timer timer_;
  std::string in_;
  std::string out_;
  bool loopback_ = false;
  bool replying_ = false;
  bool closed_ = false;
};

void AdminHttp::start(const std::string& host, int port) {
  try {
    asio::ip::tcp::resolver resolver(io_);
    const asio::ip::tcp::endpoint at =
        resolver.resolve(host, std::to_string(port)).begin()->endpoint();
    acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(io_);
    acceptor_->open(at.protocol());
    acceptor_->set_option(asio::ip::tcp::acceptor::reuse_address(true));
    acceptor_->bind(at);
    acceptor_->listen();
    port_ = acceptor_->local_endpoint().port();
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot bind admin port " + std::to_string(port) + " on " + host +
                             ": " + e.what());
  }
  {
    std::lock_guard<std::mutex> lock(postbox_->mu);
    postbox_->io = &io_;
  }
  accept();
  thread_ = std::thread([this] { io_.run(); });
}

void AdminHttp::accept() {
  acceptor_->async_accept([this](asio::error_code ec, asio::ip::tcp::socket sock) {
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
    if (!ec) admit(std::make_shared<Conn>(*this, std::move(sock)));
    accept();
  });
}

// Over the cap, the oldest connection still sending its request goes: a crowd of slow
// clients cannot keep a probe out.
void AdminHttp::admit(std::shared_ptr<Conn> c) {
  c->start();
  open_.push_back(c);
  size_t live = 0;
  open_.erase(std::remove_if(open_.begin(), open_.end(),
                             [&live](const std::weak_ptr<Conn>& w) {
                               auto p = w.lock();
                               if (!p || !p->sending()) return true;
                               ++live;
                               return false;
                             }),
              open_.end());
  for (auto it = open_.begin(); live > limits_.max_connections && it != open_.end(); ++it) {
    if (auto p = it->lock(); p && p.get() != c.get() && p->sending()) {
      counters_.dropped.fetch_add(1, std::memory_order_relaxed);
      p->close();
      --live;
    }
  }
}

void AdminHttp::stop() {
  {
    std::lock_guard<std::mutex> lock(postbox_->mu);
    postbox_->io = nullptr;
  }
  if (!thread_.joinable()) return;
  asio::post(io_, [this] {  // (on the admin thread, which owns the connections)
    asio::error_code ec;
    acceptor_->close(ec);
    for (auto& w : open_)
      if (auto p = w.lock()) p->close();
    open_.clear();
    io_.stop();
  });
  thread_.join();
}

}  // namespace fg
