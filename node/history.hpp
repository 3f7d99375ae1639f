// A node's recent past, kept by the node itself (no Prometheus needed): once a second it
// reads its counters and gauges into a point — decisions and denials per second, the
// decisions' p99, CPU, memory, connections per door, replication lag, keys, forwards — and
// keeps the last five minutes at one-second points and the last hour at ten-second points,
// in fixed rings (about 60 KB, allocated once). Its report (the point now, the rings, the
// most-denied and hottest keys, the shadow policies) is what the admin port's cluster view
// gathers from every node, over the peer links (peer request kind kPeerReport).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "request_metrics.hpp"

namespace fg {

struct Services;
class Cluster;

struct HistoryPoint {
  int64_t t_s = 0;      // the end of the interval it covers (Unix seconds)
  float decisions = 0;  // limiter decisions per second (allowed and denied)
  float denied = 0;     // of which denied, per second
  float requests = 0;   // every command, per second
  float errors = 0;     // error replies per second
  float p99_ms = 0;     // 99th percentile of the decisions' time, arrival to reply (0: none)
  float cpu = 0;        // cores busy (1: one core's worth)
  float lag_ms = 0;     // replication lag: the longest round in the interval
  float forwards = 0;   // commands forwarded to their key's owner, per second
  uint64_t rss_bytes = 0;
  uint64_t keys = 0;
  uint32_t resp_clients = 0;
  uint32_t native_clients = 0;
  uint32_t gateway_clients = 0;  // the gateway door's connections
};

// What one node tells about itself. Travels between nodes as `encode()`d bytes: the JSON,
// then the keys and shadow policies apart, so that the node gathering the cluster's view
// adds them up without parsing JSON.
struct NodeReport {
  std::string json;  // {"id", "time_ms", "now", "minutes"?, "hour"?, ...}: HistoryPoint's fields
  std::vector<RequestMetrics::DeniedKey> denied, hot;  // empty when keys are not to be shown
  struct Shadow {
    std::string policy;
    bool now = false;  // in shadow mode now (else: it denied in shadow mode before)
    uint64_t would_deny = 0;
  };
  std::vector<Shadow> shadow;

  std::string encode() const;
  static bool decode(std::string_view bytes, NodeReport& out);
};

// What a report includes (also the peer request's body: one letter each).
struct ReportAsk {
  bool keys = false;     // 'k': key names (the most-denied, the hottest)
  bool minutes = false;  // 'm': the five-minute ring
  bool hour = false;     // 'h': the hour ring
  std::string encode() const;
  static ReportAsk decode(std::string_view body);
};

class NodeHistory {
 public:
  static constexpr size_t kMinutePoints = 300;  // five minutes of one-second points
  static constexpr size_t kHourPoints = 360;    // an hour of ten-second points
  static constexpr int64_t kHourStepS = 10;

  // `cluster`: null on a standalone node.
  NodeHistory(Services& svc, Cluster* cluster, std::string id);
  // Reads the counters and gauges and adds the second's point (and the ten seconds' one
  // when a ten-second boundary has passed). Once a second, on any one thread.
  void tick();
  // As tick(), with the point's counters given (tests).
  struct Totals {
    int64_t t_ns = 0;  // wall clock
    uint64_t decisions = 0, denied = 0, requests = 0, errors = 0, forwards = 0;
    uint64_t cpu_ns = 0;
    std::array<uint64_t, kLatencyBuckets> latency{};  // the decisions' histogram
    // gauges
    float lag_ms = 0;
    uint64_t rss_bytes = 0, keys = 0;
    uint32_t resp_clients = 0, native_clients = 0, gateway_clients = 0;
  };
  void add(const Totals& t);

  HistoryPoint now() const;
  std::vector<HistoryPoint> minutes() const;  // oldest first
  std::vector<HistoryPoint> hour() const;     // oldest first
  NodeReport report(const ReportAsk& ask) const;
  const std::string& id() const { return id_; }

  // Members seen in the routing in the last hour that are no longer in it (a member
  // declared dead leaves the routing once a table without it is in force): what the
  // cluster view lists as gone. `present`: the ids in the routing now.
  struct Gone {
    std::string id;
    bool left = false;   // it said it was leaving (else: declared dead)
    int64_t last_s = 0;  // when it was last in the routing (Unix seconds)
  };
  std::vector<Gone> gone(const std::vector<std::string>& present) const;

 private:
  Totals read() const;
  static HistoryPoint between(const Totals& a, const Totals& b);
  void note_members(int64_t now_s);

  Services& svc_;
  Cluster* cluster_;
  const std::string id_;
  mutable std::mutex mu_;
  bool started_ = false;
  Totals last_, hour_start_;
  float hour_lag_max_ = 0;
  // A ring of points: its size fixed at the start, the oldest overwritten.
  struct Ring {
    std::vector<HistoryPoint> points;
    size_t next = 0;  // where the next point goes (the oldest, once full)
    size_t n = 0;     // points held
    explicit Ring(size_t size) : points(size) {}
    void push(const HistoryPoint& p);
    std::vector<HistoryPoint> in_order() const;  // oldest first
  };
  Ring minutes_, hour_;
  struct Seen {
    bool left = false;
    int64_t last_s = 0;
  };
  std::map<std::string, Seen> members_;  // (under mu_) by id
};

// The policies in shadow mode now, and any that denied in shadow mode before, with their
// would-be denials (`counts`: the node's request metrics).
std::vector<NodeReport::Shadow> shadow_policies(const Services& svc,
                                                const RequestMetrics::Counts& counts);

// The process's CPU time (user and system) and resident memory.
uint64_t process_cpu_ns();
uint64_t process_rss_bytes();

// The 99th percentile (ms) of a latency histogram (per bucket, not cumulative, bounds
// kLatencyBoundsUs), interpolated within its bucket as Prometheus's histogram_quantile
// does; 0 when the histogram is empty.
float histogram_p99_ms(const std::array<uint64_t, kLatencyBuckets>& h);

}  // namespace fg
