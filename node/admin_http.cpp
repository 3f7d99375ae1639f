// Admin HTTP routes: health, readiness, cluster JSON, status JSON and the status page.
#include "admin_http.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "bus_key.hpp"
#include "cluster.hpp"
#include "request_metrics.hpp"
#include "status_page.hpp"

namespace fg {

namespace {
std::string json_str(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}
}  // namespace

AdminHttp::AdminHttp(Services& svc, Cluster* cluster, AdminCounters& counters)
    : svc_(svc), cluster_(cluster), counters_(counters) {}

std::optional<std::string> read_admin_token(const std::string& path, std::string& why) {
  const auto lines = read_secret_lines(path, "admin token", why);
  if (!lines) return std::nullopt;
  if (lines->empty()) {
    why = "the admin token file " + path + " holds no token";
    return std::nullopt;
  }
  return lines->front();
}

void AdminHttp::set_token(std::string token) {
  std::lock_guard<std::mutex> lock(token_mu_);
  token_ = std::move(token);
}

bool AdminHttp::allowed(const std::string& auth) const {
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

std::string AdminHttp::not_ready() const {
  if (!svc_.routing) return "";
  auto rt = svc_.routing->get();
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

std::string AdminHttp::status_json() const {
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
  j += ",\"top_denied\":[";
  bool first = true;
  for (const auto& d : svc_.metrics->top_denied(10, now_ns / 1'000'000'000)) {
    j += (first ? "" : ",") + std::string("{\"key\":") + json_str(d.key) +
         ",\"denials\":" + std::to_string(d.denials) + "}";
    first = false;
  }
  return j + "]}";
}

void AdminHttp::start(const std::string& host, int port) {
  http_ = std::make_unique<httplib::Server>();
  auto& h = *http_;
  h.new_task_queue = [] { return new httplib::ThreadPool(2); };
  h.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  h.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const std::string why = not_ready();
    res.status = why.empty() ? 200 : 503;
    res.set_content(why.empty() ? "ready\n" : "not ready: " + why + "\n", "text/plain");
  });
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
  // What shows keys and the cluster's layout may want a token; probes and scrapes never do.
  auto refuse = [](httplib::Response& res) {
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer realm=\"floodgate admin\"");
    res.set_content("unauthorized: send Authorization: Bearer <admin token>\n", "text/plain");
  };
  h.Get("/cluster", [this, refuse](const httplib::Request& req, httplib::Response& res) {
    if (!allowed(req.get_header_value("Authorization"))) return refuse(res);
    res.set_header("Access-Control-Allow-Origin", "*");
    res.set_content(cluster_json(), "application/json");
  });
  h.Get("/status", [this, refuse](const httplib::Request& req, httplib::Response& res) {
    if (!allowed(req.get_header_value("Authorization"))) return refuse(res);
    res.set_header("Access-Control-Allow-Origin", "*");
    res.set_content(status_json(), "application/json");
  });
  h.Get("/", [](const httplib::Request&, httplib::Response& res) {
    // (the page holds no data: it asks /cluster and /status, with the token given after
    // '#' in its address, which browsers never send to the server)
    res.set_content(kStatusPage, "text/html; charset=utf-8");
  });
  port_ = port == 0 ? h.bind_to_any_port(host.c_str())
                    : (h.bind_to_port(host.c_str(), port) ? port : -1);
  if (port_ <= 0) {
    throw std::runtime_error("cannot bind admin port " + std::to_string(port) + " on " + host);
  }
  thread_ = std::thread([this] { http_->listen_after_bind(); });
}

void AdminHttp::stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fg
