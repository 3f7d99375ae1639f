// The node's own rings of recent points, and its report for the cluster view.
#include "history.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "client_registry.hpp"
#include "cluster.hpp"
#include "json_text.hpp"
#include "length_prefix.hpp"
#include "policy_ids.hpp"
#include "rls_config.hpp"
#include "services.hpp"
#include "shard_pool.hpp"

namespace fg {

namespace {
constexpr size_t kReportKeys = 20;  // most-denied and hottest keys each node reports

void num(std::string& out, double v) {
  char buf[32];
  if (v == static_cast<double>(static_cast<int64_t>(v)) && v < 1e15 && v > -1e15) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));  // (bytes, keys: exact)
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  }
  out += buf;
}

// The fields of a point, by name, in the order the JSON lists them.
template <class F>
void each_field(const HistoryPoint& p, F&& f) {
  f("decisions", p.decisions);
  f("denied", p.denied);
  f("requests", p.requests);
  f("errors", p.errors);
  f("p99_ms", p.p99_ms);
  f("cpu", p.cpu);
  f("rss_bytes", static_cast<double>(p.rss_bytes));
  f("keys", static_cast<double>(p.keys));
  f("resp_clients", static_cast<double>(p.resp_clients));
  f("native_clients", static_cast<double>(p.native_clients));
  f("gateway_clients", static_cast<double>(p.gateway_clients));
  f("lag_ms", p.lag_ms);
  f("forwards", p.forwards);
}

std::string point_json(const HistoryPoint& p) {
  std::string j = "{\"t\":" + std::to_string(p.t_s);
  each_field(p, [&j](const char* name, double v) {
    j += ",\"";
    j += name;
    j += "\":";
    num(j, v);
  });
  return j + "}";
}

// A ring as columns: {"step_s": s, "t": [...], "decisions": [...], ...}.
std::string ring_json(const std::vector<HistoryPoint>& pts, int64_t step_s) {
  std::string j = "{\"step_s\":" + std::to_string(step_s) + ",\"t\":[";
  for (size_t i = 0; i < pts.size(); ++i) j += (i ? "," : "") + std::to_string(pts[i].t_s);
  j += "]";
  std::vector<std::string> names, cols;
  each_field(HistoryPoint{}, [&names](const char* name, double) { names.push_back(name); });
  cols.resize(names.size());
  for (size_t i = 0; i < pts.size(); ++i) {
    size_t c = 0;
    each_field(pts[i], [&](const char*, double v) {
      if (i) cols[c] += ",";
      num(cols[c++], v);
    });
  }
  for (size_t c = 0; c < cols.size(); ++c) j += ",\"" + names[c] + "\":[" + cols[c] + "]";
  return j + "}";
}

void put_frame(std::string& out, std::string_view s) {
  const size_t at = open_frame(out);
  out.append(s);
  close_frame(out, at);
}

bool get_frame(std::string_view& in, std::string_view& out) {
  if (in.size() < 4) return false;
  const uint32_t n = read_length(in.data());
  if (in.size() - 4 < n) return false;
  out = in.substr(4, n);
  in.remove_prefix(4 + n);
  return true;
}

bool get_count(std::string_view& in, uint64_t& v) {
  std::string_view s;
  if (!get_frame(in, s) || s.empty() || s.size() > 20) return false;
  v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}
}  // namespace

uint64_t process_cpu_ns() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& t) {
    return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000 +
           static_cast<uint64_t>(t.tv_usec) * 1000;
  };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

uint64_t process_rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

float histogram_p99_ms(const std::array<uint64_t, kLatencyBuckets>& h) {
  uint64_t total = 0;
  for (uint64_t n : h) total += n;
  if (total == 0) return 0;
  const double want = 0.99 * static_cast<double>(total);
  double below = 0;
  for (size_t b = 0; b < kLatencyBuckets; ++b) {
    const double in = static_cast<double>(h[b]);
    if (below + in >= want && in > 0) {
      const double lo = b == 0 ? 0 : static_cast<double>(kLatencyBoundsUs[b - 1]);
      if (b >= kLatencyBoundsUs.size()) return static_cast<float>(lo / 1000);  // (the +Inf bucket)
      const double hi = static_cast<double>(kLatencyBoundsUs[b]);
      return static_cast<float>((lo + (hi - lo) * (want - below) / in) / 1000);
    }
    below += in;
  }
  return 0;
}

std::string ReportAsk::encode() const {
  return std::string(keys ? "k" : "") + (minutes ? "m" : "") + (hour ? "h" : "");
}

ReportAsk ReportAsk::decode(std::string_view body) {
  ReportAsk a;
  a.keys = body.find('k') != std::string_view::npos;
  a.minutes = body.find('m') != std::string_view::npos;
  a.hour = body.find('h') != std::string_view::npos;
  return a;
}

std::string NodeReport::encode() const {
  std::string out;
  put_frame(out, json);
  for (const auto* list : {&denied, &hot}) {
    std::string section;
    for (const auto& k : *list) {
      put_frame(section, k.key);
      put_frame(section, std::to_string(k.denials));
    }
    put_frame(out, section);
  }
  std::string section;
  for (const Shadow& s : shadow) {
    put_frame(section, s.policy);
    put_frame(section, s.now ? "1" : "0");
    put_frame(section, std::to_string(s.would_deny));
  }
  put_frame(out, section);
  return out;
}

bool NodeReport::decode(std::string_view in, NodeReport& out) {
  std::string_view json, lists[2], shadow;
  if (!get_frame(in, json) || !get_frame(in, lists[0]) || !get_frame(in, lists[1]) ||
      !get_frame(in, shadow) || !in.empty()) {
    return false;
  }
  out.json.assign(json);
  for (int l = 0; l < 2; ++l) {
    auto& list = l == 0 ? out.denied : out.hot;
    while (!lists[l].empty()) {
      std::string_view key;
      uint64_t n = 0;
      if (!get_frame(lists[l], key) || !get_count(lists[l], n)) return false;
      list.push_back({std::string(key), n});
    }
  }
  while (!shadow.empty()) {
    std::string_view policy, now;
    uint64_t n = 0;
    if (!get_frame(shadow, policy) || !get_frame(shadow, now) || !get_count(shadow, n)) {
      return false;
    }
    out.shadow.push_back({std::string(policy), now == "1", n});
  }
  return true;
}

NodeHistory::NodeHistory(Services& svc, Cluster* cluster, std::string id)
    : svc_(svc),
      cluster_(cluster),
      id_(std::move(id)),
      minutes_(kMinutePoints),
      hour_(kHourPoints) {}

void NodeHistory::Ring::push(const HistoryPoint& p) {
  points[next] = p;
  next = (next + 1) % points.size();
  n = std::min(n + 1, points.size());
}

std::vector<HistoryPoint> NodeHistory::Ring::in_order() const {
  std::vector<HistoryPoint> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i)
    out.push_back(points[(next + points.size() - n + i) % points.size()]);
  return out;
}

NodeHistory::Totals NodeHistory::read() const {
  Totals t;
  t.t_ns = svc_.clock->now_ns();
  const auto counts = svc_.metrics->counts();
  for (size_t c = 0; c < counts.requests.size(); ++c) {
    const auto& r = counts.requests[c];
    const uint64_t allowed = r[static_cast<size_t>(RequestResult::kAllowed)];
    const uint64_t denied = r[static_cast<size_t>(RequestResult::kDenied)];
    for (uint64_t n : r) t.requests += n;
    t.errors += r[static_cast<size_t>(RequestResult::kError)];
    t.decisions += allowed + denied;
    t.denied += denied;
    if (allowed + denied == 0) continue;  // (a command that decides nothing)
    for (size_t b = 0; b < kLatencyBuckets; ++b) t.latency[b] += counts.latency[c][b];
  }
  t.forwards = svc_.counters.forwarded.load(std::memory_order_relaxed);
  t.cpu_ns = process_cpu_ns();
  t.rss_bytes = process_rss_bytes();
  t.keys = svc_.shards ? svc_.shards->keys() : 0;
  if (svc_.clients) {
    const size_t all = svc_.clients->count();
    const size_t native =
        svc_.settings.native_port > 0 ? svc_.clients->count_on_port(svc_.settings.native_port) : 0;
    t.native_clients = static_cast<uint32_t>(native);
    t.resp_clients = static_cast<uint32_t>(all - std::min(all, native));
  }
  if (svc_.rls) {
    t.gateway_clients =
        static_cast<uint32_t>(svc_.rls->stats().connections.load(std::memory_order_relaxed));
  }
  if (cluster_) {
    t.lag_ms = static_cast<float>(cluster_->replication().last_round_us.load()) / 1000.0f;
  }
  return t;
}

void NodeHistory::tick() {
  const Totals t = read();
  add(t);
  note_members(t.t_ns / 1'000'000'000);
}

void NodeHistory::note_members(int64_t now_s) {
  if (!svc_.routing) return;
  const auto rt = svc_.routing->get();
  std::lock_guard<std::mutex> lock(mu_);
  for (const RouteNode& n : rt->nodes) {
    Seen& s = members_[n.id];
    s.left = !n.self && n.state == MemberState::kLeft;
    s.last_s = now_s;
  }
  for (auto it = members_.begin(); it != members_.end();) {
    it = now_s - it->second.last_s > 3600 ? members_.erase(it) : std::next(it);
  }
}

std::vector<NodeHistory::Gone> NodeHistory::gone(const std::vector<std::string>& present) const {
  std::vector<Gone> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, s] : members_) {
    if (std::find(present.begin(), present.end(), id) != present.end()) continue;
    out.push_back({id, s.left, s.last_s});
  }
  return out;
}

HistoryPoint NodeHistory::between(const Totals& a, const Totals& b) {
  HistoryPoint p;
  p.t_s = b.t_ns / 1'000'000'000;
  const double dt = std::max<double>(static_cast<double>(b.t_ns - a.t_ns) / 1e9, 1e-3);
  auto rate = [dt](uint64_t x, uint64_t y) {
    return static_cast<float>(y >= x ? static_cast<double>(y - x) / dt : 0);
  };
  p.decisions = rate(a.decisions, b.decisions);
  p.denied = rate(a.denied, b.denied);
  p.requests = rate(a.requests, b.requests);
  p.errors = rate(a.errors, b.errors);
  p.forwards = rate(a.forwards, b.forwards);
  p.cpu = rate(a.cpu_ns, b.cpu_ns) / 1e9f;
  std::array<uint64_t, kLatencyBuckets> h{};
  for (size_t i = 0; i < kLatencyBuckets; ++i)
    h[i] = b.latency[i] >= a.latency[i] ? b.latency[i] - a.latency[i] : 0;
  p.p99_ms = histogram_p99_ms(h);
  p.lag_ms = b.lag_ms;
  p.rss_bytes = b.rss_bytes;
  p.keys = b.keys;
  p.resp_clients = b.resp_clients;
  p.native_clients = b.native_clients;
  p.gateway_clients = b.gateway_clients;
  return p;
}

void NodeHistory::add(const Totals& t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_) {
    started_ = true;
    last_ = hour_start_ = t;
    hour_lag_max_ = t.lag_ms;
    return;
  }
  if (t.t_ns <= last_.t_ns) return;  // (the wall clock stepped back: wait for it)
  minutes_.push(between(last_, t));
  last_ = t;
  hour_lag_max_ = std::max(hour_lag_max_, t.lag_ms);
  if (t.t_ns / 1'000'000'000 / kHourStepS != hour_start_.t_ns / 1'000'000'000 / kHourStepS) {
    HistoryPoint p = between(hour_start_, t);
    p.lag_ms = hour_lag_max_;
    hour_.push(p);
    hour_start_ = t;
    hour_lag_max_ = t.lag_ms;
  }
}

HistoryPoint NodeHistory::now() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (minutes_.n == 0) return {};
  return minutes_.points[(minutes_.next + kMinutePoints - 1) % kMinutePoints];
}

std::vector<HistoryPoint> NodeHistory::minutes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return minutes_.in_order();
}

std::vector<HistoryPoint> NodeHistory::hour() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hour_.in_order();
}

std::vector<NodeReport::Shadow> shadow_policies(const Services& svc,
                                                const RequestMetrics::Counts& counts) {
  std::vector<NodeReport::Shadow> out;
  const auto policies = svc.policies->snapshot();
  const auto names = PolicyIds::get().names();
  for (size_t p = 1; p < counts.policy.size() && p < names.size(); ++p) {
    const auto it = policies->policies.find(names[p]);
    const bool now = it != policies->policies.end() && it->second.shadow;
    if (!now && !counts.policy[p][2]) continue;
    out.push_back({names[p], now, counts.policy[p][2]});
  }
  return out;
}

NodeReport NodeHistory::report(const ReportAsk& ask) const {
  NodeReport r;
  const int64_t now_ns = svc_.clock->now_ns();
  std::string& j = r.json;
  j = "{\"id\":" + json_str(id_);
  j += ",\"time_ms\":" + std::to_string(now_ns / 1'000'000);
  j += ",\"uptime_s\":" + std::to_string(now_ns / 1'000'000'000 - svc_.settings.start_ms / 1000);
  j += ",\"version\":" + json_str(svc_.settings.version);
  j += ",\"leases\":" + std::to_string(svc_.shards ? svc_.shards->leases() : 0);
  j += ",\"now\":" + point_json(now());
  if (ask.minutes) j += ",\"minutes\":" + ring_json(minutes(), 1);
  if (ask.hour) j += ",\"hour\":" + ring_json(hour(), kHourStepS);
  j += "}";
  r.shadow = shadow_policies(svc_, svc_.metrics->counts());
  if (ask.keys) {
    r.denied = svc_.metrics->top_denied(kReportKeys, now_ns / 1'000'000'000);
    r.hot = svc_.metrics->top_hot(kReportKeys, now_ns / 1'000'000'000);
  }
  return r;
}

}  // namespace fg
