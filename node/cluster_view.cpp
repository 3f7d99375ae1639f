// /overview: the whole cluster on one page's worth of JSON. The node asked gathers every
// live member's report over the peer links (peer request kind kPeerReport, answered on the
// member's cluster thread from its own rings and counters), adds the keys and shadow
// policies up, and answers once every member has answered or its time is up. A member that
// is dead, or does not answer in time, is listed with its state and why it has no figures.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <map>

#include "admin_http.hpp"
#include "cluster.hpp"
#include "history.hpp"
#include "json_text.hpp"
#include "request_metrics.hpp"
#include "services.hpp"

namespace fg {

namespace {
// The value of `name` in a query string ("a=1&b=2"), or empty.
std::string_view query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

constexpr size_t kOverviewKeys = 10;

std::string clock_text(int64_t unix_s) {
  const time_t t = static_cast<time_t>(unix_s);
  tm parts{};
  gmtime_r(&t, &parts);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S UTC", &parts);
  return buf;
}  // most-denied and hottest keys the cluster view lists
}  // namespace

struct AdminHttp::Gather {
  struct Node {
    std::string id, state;
    bool self = false;
    bool reachable = false;
    std::string why;  // no figures: why
    NodeReport report;
  };
  std::vector<Node> nodes;
  size_t pending = 0;
  bool with_keys = false;
  std::string what;  // what it asks (history, keys): requests alike share it
  std::vector<std::function<void(Reply)>> waiting;
};

void AdminHttp::overview(std::string_view query, bool with_keys, std::function<void(Reply)> done) {
  ReportAsk ask;
  ask.keys = with_keys;
  const std::string_view history = query_value(query, "history");
  ask.minutes = history == "minutes";
  ask.hour = history == "hour";
  const std::string what = ask.encode();
  const int64_t now_ms = steady_ns() / 1'000'000;
  if (auto it = gathered_.find(what);
      it != gathered_.end() && now_ms - it->second.first < kOverviewReuseMs) {
    return done(it->second.second);
  }
  if (auto it = gathering_.find(what); it != gathering_.end()) {
    return it->second->waiting.push_back(std::move(done));
  }
  counters_.gathered.fetch_add(1, std::memory_order_relaxed);
  auto g = std::make_shared<Gather>();
  g->with_keys = with_keys;
  g->what = what;
  g->waiting.push_back(std::move(done));
  gathering_[what] = g;
  auto mine = [&] {
    Gather::Node n;
    n.self = true;
    n.state = "alive";
    if (history_) {
      n.id = history_->id();
      n.report = history_->report(ask);
      n.reachable = true;
    } else {
      n.why = "this node keeps no history";
    }
    return n;
  };
  if (!svc_.routing || !cluster_) {
    g->nodes.push_back(mine());
    return finish(g);
  }
  const auto rt = svc_.routing->get();
  std::vector<std::pair<size_t, std::string>> ask_them;  // (index in nodes, bus address)
  for (const RouteNode& m : rt->nodes) {
    if (m.self) {
      g->nodes.push_back(mine());
      g->nodes.back().id = m.id;
      continue;
    }
    Gather::Node n;
    n.id = m.id;
    n.state = state_name(m.state);
    if (m.state == MemberState::kDead || m.state == MemberState::kLeft) {
      n.why = m.state == MemberState::kDead ? "declared dead" : "left the cluster";
    } else {
      ask_them.emplace_back(g->nodes.size(), m.peer_addr);
    }
    g->nodes.push_back(std::move(n));
  }
  if (history_) {
    std::vector<std::string> present;
    for (const RouteNode& m : rt->nodes) present.push_back(m.id);
    for (const NodeHistory::Gone& gone : history_->gone(present)) {
      Gather::Node n;
      n.id = gone.id;
      n.state = gone.left ? "left" : "dead";
      n.why = (gone.left ? "left the cluster" : "declared dead") + std::string(", last seen ") +
              clock_text(gone.last_s);
      g->nodes.push_back(std::move(n));
    }
  }
  g->pending = ask_them.size();
  if (g->pending == 0) return finish(g);
  const std::string body = ask.encode();
  for (const auto& [at, addr] : ask_them) {
    cluster_->call(addr, kPeerReport, body, std::chrono::milliseconds(kOverviewWaitMs),
                   [this, g, at = at, box = postbox_](PeerStatus st, std::string answer) {
                     std::lock_guard<std::mutex> lock(box->mu);
                     if (!box->io) return;  // (the port has stopped)
                     asio::post(*box->io, [this, g, at, st, answer = std::move(answer)]() mutable {
                       Gather::Node& n = g->nodes[at];
                       if (st != PeerStatus::kOk) {
                         n.why = st == PeerStatus::kUnknownKind   ? "runs a version without reports"
                                 : st == PeerStatus::kUnavailable ? "cannot be reached"
                                 : st == PeerStatus::kTimeout     ? "did not answer in time"
                                                                  : "answered with an error";
                       } else if (!NodeReport::decode(answer, n.report)) {
                         n.why = "sent a report this node cannot read";
                       } else {
                         n.reachable = true;
                       }
                       if (--g->pending == 0) finish(g);
                     });
                   });
  }
}

void AdminHttp::finish(const std::shared_ptr<Gather>& g) {
  std::string j = "{\"cluster\":" + cluster_json();
  j += ",\"time_ms\":" + std::to_string(svc_.clock->now_ns() / 1'000'000);
  j += ",\"keys_hidden\":" + std::string(g->with_keys ? "false" : "true");
  j += ",\"nodes\":[";
  std::map<std::string, uint64_t> denied, hot;
  std::map<std::string, NodeReport::Shadow> shadow;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const Gather::Node& n = g->nodes[i];
    if (i) j += ",";
    j += "{\"id\":" + json_str(n.id) + ",\"state\":" + json_str(n.state) +
         ",\"self\":" + (n.self ? "true" : "false") +
         ",\"reachable\":" + (n.reachable ? "true" : "false");
    if (!n.reachable) {
      j += ",\"why\":" + json_str(n.why) + "}";
      continue;
    }
    j += ",\"report\":" + n.report.json + "}";
    for (const auto& k : n.report.denied) denied[k.key] += k.denials;
    for (const auto& k : n.report.hot) hot[k.key] += k.denials;
    for (const auto& s : n.report.shadow) {
      NodeReport::Shadow& t = shadow[s.policy];
      t.policy = s.policy;
      t.now = t.now || s.now;
      t.would_deny += s.would_deny;
    }
  }
  j += "]";
  auto top = [&j](const char* name, const char* count, const std::map<std::string, uint64_t>& m) {
    std::vector<std::pair<uint64_t, std::string>> v;
    for (const auto& [k, n] : m) v.emplace_back(n, k);
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    if (v.size() > kOverviewKeys) v.resize(kOverviewKeys);
    j += ",\"" + std::string(name) + "\":[";
    for (size_t i = 0; i < v.size(); ++i) {
      j += (i ? ",{\"key\":" : "{\"key\":") + json_str(v[i].second) + ",\"" + count +
           "\":" + std::to_string(v[i].first) + "}";
    }
    j += "]";
  };
  top("top_denied", "denials", denied);
  top("hot_keys", "decisions", hot);
  j += ",\"shadow\":[";
  bool first = true;
  for (const auto& [name, s] : shadow) {
    j += (first ? "" : ",") + std::string("{\"policy\":") + json_str(name) +
         ",\"shadow\":" + (s.now ? "true" : "false") +
         ",\"would_deny\":" + std::to_string(s.would_deny) + "}";
    first = false;
  }
  j += "]}";
  Reply r;
  r.type = "application/json";
  r.body = std::move(j);
  gathered_[g->what] = {steady_ns() / 1'000'000, r};
  gathering_.erase(g->what);
  for (auto& done : g->waiting) done(r);
}

}  // namespace fg
