#include "scenario.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

#include "history.hpp"
#include "lease_upkeep.hpp"
#include "request_job.hpp"
#include "rls_translate.hpp"
#include "take_all.hpp"
#include "world.hpp"

namespace fg::sim {

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;
// The load and the bounds, as chaos/ has them (chaos/README.md, "The load").
constexpr int64_t kLimit = 40;        // the hot key: sliding log, 40 per 1 s, fail_closed
constexpr int64_t kShadowLimit = 20;  // the shadow log: 20 per 1 s, fail_closed (shadow)
constexpr int64_t kWindowNs = kS;
constexpr int64_t kLeaseLimit = 4;  // concurrency 4, TTL 2 s, held 20-120 ms
constexpr int64_t kLeaseTtlNs = 2 * kS;
// The full load's other limiters (Load::kFull), all on the hot key's slot.
constexpr int64_t kBucketCap = 10, kBucketRate = 20;  // token_bucket: 10, 20 per 1 s
constexpr int64_t kDebtRate = 10;  // the owing bucket: 5, 10 per 1 s; charged 3 afterwards
constexpr int64_t kDebtCharge = 3;
constexpr int64_t kGcraBurst = 4, kGcraRate = 10;  // gcra 4 10 1000 (CL.THROTTLE): 5, 10/s
// The gateway door (the doors load): a fixed window of its rules file, 15 per second, asked
// 20 times a second through each node.
constexpr int64_t kGatewayLimit = 15;
constexpr int64_t kWindowLimit = 30;  // sliding_window: 30 per 1 s
// The hot load (Load::kHot): one key of each, 50 a second a client, 3 clients a node; the
// nodes slice a key they forward more than 100 times a second, for 100 ms.
// (their limits above what the owner's own clients ask, so slices are granted, and well
// below what all ask, so the limit is reached)
constexpr int64_t kHotCap = 40, kHotRate = 400;  // token_bucket: 40, 400 per 1 s
constexpr int64_t kHotWindowLimit = 300;         // fixed_window: 300 per 1 s
constexpr int64_t kSliceThreshold = 100, kSliceMs = 100;
// calendar_window 25 day TZ Europe/Berlin: the day of 23 hours that ends at this instant
// (2026-03-30 00:00 CEST, 22:00Z — the world's clock starts 13 s before it, world.cpp), then
// the next.
constexpr int64_t kCalendarLimit = 25;
// Takes that wait (FG.TAKE ... WAIT 300): token_bucket 5, 10 per 1 s, asked 40 times a second.
constexpr int64_t kWaitCap = 5, kWaitRate = 10, kWaitMs = 300;
constexpr int64_t kCalendarMidnightNs = int64_t{1'774'821'600} * 1'000'000'000;
constexpr int64_t kReserveTtlMs = 5000;  // a reservation not committed is given back
constexpr int64_t kLagNs = 5 * kMs;      // Δ, the node default
constexpr int64_t kSlackNs = 50 * kMs;   // clients' view of "when" is their request's span
constexpr int64_t kClientTimeoutNs = 3 * kS;
constexpr int64_t kSettleNs = 3 * kS;  // after a fault has healed and the cluster formed
constexpr int64_t kDetectBoundNs = 3 * kS;
// Two nodes: nobody confirms the survivor's suspicion, which runs its longest (4 s).
constexpr int64_t kDetectPairBoundNs = 5 * kS;
// Two crashes within one detection window: each is suspected while the other still counts
// among those who could confirm it, so fewer confirmations come than the timeout expects
// (Membership::suspicion_timeout) — at most suspicion_max (4 s).
constexpr int64_t kDetectTwoBoundNs = 4 * kS;
constexpr int64_t kConvergeBoundNs = 30 * kS;
constexpr int64_t kFormTimeoutNs = 60 * kS;

// clang-format off
const char* const kFaultNames[] = {
    "kill",        "pause",     "partition", "minority",        "oneway",       "loss",
    "delay",       "clock",     "join",      "leave",           "restart",      "disk",
    "rolling",     "bounce",    "reboot",    "overlap",         "kill+leave",   "kill+join",
    "leave+leave", "kill+kill", "partition+leave", "restart+kill"};
// clang-format on

const char* name_of(Fault f) { return kFaultNames[static_cast<int>(f)]; }

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

struct Client {
  char kind = 't';  // what it sends (history.hpp, Op::kind)
  int node = 0;
  int64_t period_ns = 50 * kMs;
  std::string key;
  std::string holder;
  LimitSpec spec;
  uint64_t lease = 0;   // leases: the one held (0: none)
  uint64_t ticket = 0;  // reservations: the one pending (0: none)
  uint64_t conn = 0;    // BOUND leases: the open connection (Door::client_id), 0: none
  int conn_starts = 0;  // ... the node's start count when it opened
  int64_t acquire_start = 0;
  bool expire_next = false;        // INCR made the key: EXPIRE it next
  std::vector<std::string> words;  // data: incr key, expire key seconds
  std::vector<std::string_view> incr, expire;
  std::string twin;                    // 'h': the enforcing twin's key, asked in the same flight
  std::vector<TakeAllItem> all;        // 'A': FG.TAKEALL's limits (the first is the counter read)
  std::shared_ptr<MemoryClient> resp;  // 'R': its connection (null: none open)
  std::string rbuf;                    // ... what the node wrote not yet read as replies
  int sent = 0;                        // ... requests sent (MULTI and EVAL in turn)
  // 'S', a subscriber: the open connection's number (1, 2, …) and when its subscription
  // was confirmed (-1: not yet). 'P', a publisher: the last message's number.
  int conn_no = 0;
  int64_t sub_since = -1;
  uint64_t seq = 0;
};

// A RESP command as a client sends it.
std::string command(const std::vector<std::string>& words) {
  std::string out = "*" + std::to_string(words.size()) + "\r\n";
  for (const auto& w : words) out += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
  return out;
}

// Where the RESP value starting at `at` ends; npos when it is not all there yet.
size_t resp_end(const std::string& s, size_t at) {
  if (at >= s.size()) return std::string::npos;
  const size_t eol = s.find("\r\n", at);
  if (eol == std::string::npos) return std::string::npos;
  const char t = s[at];
  if (t == '+' || t == '-' || t == ':') return eol + 2;
  const long long n = std::atoll(s.c_str() + at + 1);
  if (t == '$') {
    if (n < 0) return eol + 2;
    return s.size() >= eol + 2 + n + 2 ? eol + 2 + n + 2 : std::string::npos;
  }
  if (t == '*') {
    size_t pos = eol + 2;
    for (long long i = 0; i < n; ++i) {
      pos = resp_end(s, pos);
      if (pos == std::string::npos) return pos;
    }
    return pos;
  }
  return s.size();  // (not RESP: taken whole, and judged an error below)
}

// An unavailable owner's answers through the RESP door (a fault's, not the load's doing).
bool unavailable(const std::string& reply) {
  return reply.find("TRYAGAIN") != std::string::npos ||
         reply.find("CLUSTERDOWN") != std::string::npos;
}

const char* const kRespScript =
    "local n = redis.call('INCR', KEYS[1]) redis.call('EXPIRE', KEYS[1], 3600) return n";

struct Span {
  int64_t start = 0, end = 0;  // end: healed, or the fault's last effect
  int64_t converged = -1;      // the cluster formed again (ns), -1: not yet
  bool owner_lost = false;     // the hot key's owner crashed or stopped (kill, pause)
  // A partition that leaves the owner apart from its replica (split, one-way): both sides
  // may count the same key until the owner sees it has lost the quorum, and the merge at
  // the heal keeps the larger count. The loss is a figure, as in chaos/, not a bound.
  bool split_copies = false;
  // A node on the side of a split without the quorum (the owner cut off from a majority;
  // of two nodes, the higher id): from the first other node declaring it dead, it must
  // give no definite answer of its own until the heal (watch_cut_off).
  int isolated = -1;
  int64_t first_dead = -1;
  std::string label;
  // disk: the node whose directory refused writes, and its saves before and after.
  int disk_node = -1;
  uint64_t saves_failed_before = 0, saves_failed_after = 0, saves_ok_after_mend = 0;
  int64_t mended = -1;
  // reboot: the whole cluster went down at start; what it may lose is what came after the
  // earliest of the nodes' last good saves (world time).
  int64_t saved_at = -1;
  // Two faults at once: the instants of further crashes inside this one (each may lose what
  // its victim admitted in the last Δ before it, as the first).
  std::vector<int64_t> more_crashes;
  // From when what a fault may lose was admitted: the last Δ before it, or since the last
  // save when every copy went down; and until when: the fault, or — after a reboot — until
  // the restored state has been merged back (a second after the cluster formed again:
  // what a slot admitted from its empty start before then, the merge's larger count absorbs).
  int64_t loss_from() const;
  int64_t loss_to() const;
};

int64_t Span::loss_from() const {
  return (saved_at >= 0 ? std::min(saved_at, start - kLagNs) : start - kLagNs) - kSlackNs;
}

int64_t Span::loss_to() const {
  return saved_at >= 0 && converged >= 0 ? converged + 1'000'000'000 : start;
}

class Run {
 public:
  Run(uint64_t seed, const Options& opt)
      : seed_(seed), opt_(opt), world_(seed, opt.nodes, opt.load != Load::kBasic) {
    world_.set_verbose(opt.verbose);
    world_.set_config([hot = opt.load == Load::kHot, replicas = opt.replicas](NodeConfig& c) {
      c.cluster_replicas = replicas;
      // (only the hot load slices: the others' keys stay below any threshold anyway, and
      // their seeds replay as they did)
      c.slice_threshold = hot ? kSliceThreshold : 0;
      c.slice_ms = kSliceMs;
    });
  }
  ~Run() { stopped_ = true; }
  Verdict go();

 private:
  void setup_clients();
  void issue(int c);
  void next(int c, int64_t after_ns) {
    if (!stopped_) world_.at(world_.now() + after_ns, [this, c] { issue(c); });
  }
  void done(int c, size_t op, const std::vector<Outcome>& out);
  void issue_resp(int c);
  // The gateway door's translation (api/rls/rls_translate.hpp) on the client's node: a
  // ShouldRateLimit call made into the core's requests, run as the door runs them, and its
  // answer read back from the response (OK, OVER_LIMIT, or a status: unknown).
  void issue_gateway(int c);
  RlsTranslator& gateway_of(int node);
  // The hot load: records each quota slice node `node` asks for and is granted (its
  // process's HotSlices observed), in world time.
  void watch_slices(int node);
  // Tokens of the slices of `kind`'s key asked for before `t` and alive after it.
  int64_t slices_outstanding(char kind, int64_t t) const;
  // Opens `cl`'s RESP connection to its node if it has none open to the node's current
  // process; hangs a client's connection up and schedules its next request.
  void connect_resp(Client& cl);
  void hang_up(int c, const std::shared_ptr<MemoryClient>& conn);
  // Pub/sub through the RESP door (the doors load): a subscriber per node, publishers on
  // two nodes; checked for messages delivered twice, out of order, or — while healthy —
  // not at all (check_pubsub).
  void issue_sub(int c);
  void end_subscription(Client& cl, int c);
  void issue_pub(int c);
  void read_pub(int c, size_t rec, std::shared_ptr<MemoryClient> conn, int64_t t0);
  struct PubsubFigures {
    int64_t expected = 0, delivered = 0;
  };
  PubsubFigures check_pubsub(const std::vector<std::pair<int64_t, int64_t>>& healthy, int64_t end);
  struct Published {
    int pub;
    uint64_t seq;
    int64_t sent, answered;  // answered -1: no answer (an error, the node gone)
  };
  struct Subscribed {
    int sub;
    int64_t from, to;  // confirmed, until the connection ended (-1: open)
  };
  struct Delivered {
    int sub, conn_no, pub;
    uint64_t seq;
  };
  std::vector<Published> published_;
  std::vector<Subscribed> subscribed_;
  std::vector<Delivered> delivered_;
  void read_resp(int c, size_t op, size_t replies, std::shared_ptr<MemoryClient> conn, int64_t t0);
  void close_connection(int c);
  void inject(Fault f, int64_t dur_ns);
  // Two faults at once (Fault::kOverlap and the pairs): the first now, the second inside
  // its detection or hand-off window.
  void overlap(Fault f, size_t span, int owner, int64_t dur_ns);
  Fault draw_overlap(size_t up);
  int replica_of(int owner);  // the next live node in id order (the table's ring)
  // Starts node i again once it is down (a leave still under way ends first).
  void start_when_down(int i);
  void cut_between(const std::vector<int>& a, const std::vector<int>& b, bool both_ways);
  void heal(size_t span);
  void watch_detection(int victim, int64_t since);
  void watch_convergence(size_t span);
  void watch_cut_off(size_t span, const std::vector<int>& a, const std::vector<int>& b);
  void watch_first_dead(size_t span);
  void roll(size_t span, std::vector<int> order, size_t k);
  void stop_gracefully(int victim, std::function<void()> then);
  // Under packet loss alone nobody is declared dead (DESIGN.md: no false "dead").
  void watch_no_false_dead(int64_t until);
  bool read_counter(const Client& c, int64_t& count, int64_t& start, int64_t& end);
  const Client& first_of(char kind) const {
    return *std::find_if(clients_.begin(), clients_.end(),
                         [kind](const Client& x) { return x.kind == kind; });
  }
  bool has(char kind) const {
    return std::any_of(clients_.begin(), clients_.end(),
                       [kind](const Client& x) { return x.kind == kind; });
  }
  void check(bool ok, const std::string& what);
  std::vector<int> up_nodes() const;

  uint64_t seed_;
  Options opt_;
  History hist_;
  std::vector<Client> clients_;
  std::vector<Span> spans_;
  std::vector<std::string> failures_;
  std::ostringstream figures_;
  int64_t detect_worst_ = -1;
  std::vector<std::pair<int64_t, int>> crashed_at_;  // (when, node): every crash watched
  int64_t leave_worst_ = -1;                         // the longest graceful leave, begin to left()
  std::set<int> leaving_;                            // nodes between begin_leave() and their end
  uint64_t next_conn_ = 1;
  int64_t twin_disagreed_ = 0;  // shadow answers unlike their enforcing twin's
  // The gateway door's rules (one file, read at setup) and a translator per node's process.
  std::unique_ptr<RlsRules> rls_rules_;
  struct Gateway {
    int starts = -1;  // the node's start count it was made for
    std::shared_ptr<RlsTranslator> translate;
  };
  std::vector<Gateway> gateways_;
  bool stopped_ = false;
  // The hash tag of every client key (one slot), and the hot key. Two nodes: a tag of the
  // higher id's slots, so a split leaves the owner on the side that must step down.
  std::string tag_ = "{sim}";
  std::string hot_ = tag_ + ":log";
  std::string hot_figures_;  // the hot load: takes admitted from slices, over-admission
  struct Slice {
    char kind;
    int64_t asked, expires, tokens;  // world time
  };
  std::vector<Slice> slices_;
  std::map<std::pair<int, std::string>, int64_t> asking_;  // (node, key): asked at
  World world_;  // last: destroyed first, while what its callbacks touch still exists
};

void Run::check(bool ok, const std::string& what) {
  if (!ok) failures_.push_back(what);
}

std::vector<int> Run::up_nodes() const {
  std::vector<int> out;
  for (size_t i = 0; i < const_cast<World&>(world_).size(); ++i)
    if (const_cast<World&>(world_).node(i).up()) out.push_back(static_cast<int>(i));
  return out;
}

void Run::setup_clients() {
  const int n = opt_.nodes;
  auto add = [&](char kind, int node, int64_t period, std::string key, LimitSpec spec) {
    Client c;
    c.kind = kind;
    c.node = node % n;
    c.period_ns = period;
    c.key = std::move(key);
    c.spec = spec;
    c.holder = "holder-" + std::to_string(clients_.size());
    clients_.push_back(std::move(c));
  };
  LimitSpec log = LimitSpec::window(Kind::kSlidingLog, kLimit, kWindowNs);
  log.on_unavailable = FailMode::kClosed;
  LimitSpec ctr = LimitSpec::window(Kind::kFixedWindow, kMaxCount, kMaxPeriodNs);
  LimitSpec ctrs = ctr;
  ctrs.sync = true;
  LimitSpec lease = LimitSpec::concurrency(kLeaseLimit, kLeaseTtlNs);
  lease.on_unavailable = FailMode::kClosed;
  // The full load sends fewer of these, for room for the rest at the same speed, and the
  // same load whatever the cluster's size (the clients spread over the nodes).
  const int k = opt_.load == Load::kBasic ? 2 : 1;
  const int hot = opt_.load == Load::kBasic ? 4 * n : 6;
  for (int i = 0; i < hot; ++i) add('t', i, 50 * kMs, hot_, log);  // 20/s each
  for (int i = 0; i < 2 * k; ++i) add('c', i, 25 * kMs, tag_ + ":ctr", ctr);
  for (int i = 0; i < 2 * k; ++i) add('s', i, 25 * kMs, tag_ + ":ctrs", ctrs);
  for (int i = 0; i < 8; ++i) add('a', i, 50 * kMs, tag_ + ":lease", lease);
  if (opt_.load == Load::kBasic) return;
  LimitSpec bucket = LimitSpec::token_bucket(kBucketCap, kBucketRate, kS);
  bucket.on_unavailable = FailMode::kClosed;
  LimitSpec gcra = LimitSpec::gcra(kGcraBurst, kGcraRate, kS);
  gcra.on_unavailable = FailMode::kClosed;
  LimitSpec window = LimitSpec::window(Kind::kSlidingWindow, kWindowLimit, kWindowNs);
  window.on_unavailable = FailMode::kClosed;
  // Each at 20/s (leases: between holds), on keys of the hot key's slot, through every node;
  // twice what the limit lets through, and more lease clients than permits.
  for (int i = 0; i < 2; ++i) add('b', i, 50 * kMs, tag_ + ":bucket", bucket);
  for (int i = 0; i < 2; ++i) add('g', i, 50 * kMs, tag_ + ":gcra", gcra);
  for (int i = 0; i < 2; ++i) add('w', i, 50 * kMs, tag_ + ":window", window);
  for (int i = 0; i < 2; ++i) add('v', i, 50 * kMs, tag_ + ":resv", ctr);
  for (int i = 0; i < 2; ++i) add('d', i, 50 * kMs, tag_ + ":incr", LimitSpec{});
  for (int i = 0; i < 2; ++i) add('m', i, 50 * kMs, tag_ + ":txn", LimitSpec{});
  for (int i = 0; i < 6; ++i) add('o', i, 50 * kMs, tag_ + ":lease2", lease);
  for (int i = 0; i < 6; ++i) add('u', i, 50 * kMs, tag_ + ":lease3", lease);
  // A bucket charged afterwards (FG.ADJUST): one op in four charges 3 more, into debt.
  LimitSpec owing = LimitSpec::token_bucket(5, kDebtRate, kS);
  owing.on_unavailable = FailMode::kClosed;
  for (int i = 0; i < 2; ++i) add('j', i, 50 * kMs, tag_ + ":owing", owing);
  // FG.TAKEALL over a counter that never denies and a bucket that often does (two keys of
  // the slot): the counter counts exactly the admitted ones, give or take the stated bound.
  LimitSpec all_bucket = LimitSpec::token_bucket(kBucketCap, kBucketRate, kS);
  all_bucket.on_unavailable = FailMode::kClosed;
  for (int i = 0; i < 2; ++i) {
    add('A', i, 50 * kMs, tag_ + ":all:ctr", ctr);
    clients_.back().all = {{tag_ + ":all:ctr", ctr}, {tag_ + ":all:lim", all_bucket}};
  }
  // Takes that wait up to 300 ms for their admission, in arrival order.
  LimitSpec waiting = LimitSpec::token_bucket(kWaitCap, kWaitRate, kS);
  waiting.on_unavailable = FailMode::kClosed;
  for (int i = 0; i < 2; ++i) add('z', i, 25 * kMs, tag_ + ":wait", waiting);
  // A calendar window: 25 a day in Berlin, at 40 a second, across a local midnight.
  Result<LimitSpec> calendar = make_calendar(kCalendarLimit, "day", "Europe/Berlin");
  if (calendar.ok()) {
    LimitSpec cal = calendar.value();
    cal.on_unavailable = FailMode::kClosed;
    for (int i = 0; i < 2; ++i) add('y', i, 50 * kMs, tag_ + ":calendar", cal);
  } else {
    check(false, "calendar window: " + calendar.error());
  }
  // A shadow sliding log (never denies), each request asked in the same flight as its
  // enforcing twin on a key of the same slot: their answers must agree.
  LimitSpec shadow = LimitSpec::window(Kind::kSlidingLog, kShadowLimit, kWindowNs);
  shadow.on_unavailable = FailMode::kClosed;
  shadow.shadow = true;
  for (int i = 0; i < 2; ++i) {
    add('h', i, 50 * kMs, tag_ + ":shadow", shadow);  // (twice the limit together)
    clients_.back().twin = tag_ + ":twin";
  }
  // Hot keys taken through every node past the slice threshold (3 clients a node, 50/s each).
  if (opt_.load == Load::kHot) {
    LimitSpec hot_bucket = LimitSpec::token_bucket(kHotCap, kHotRate, kS);
    hot_bucket.on_unavailable = FailMode::kClosed;
    LimitSpec hot_window = LimitSpec::window(Kind::kFixedWindow, kHotWindowLimit, kS);
    hot_window.on_unavailable = FailMode::kClosed;
    for (int i = 0; i < 3 * n; ++i) add('H', i, 20 * kMs, tag_ + ":hotbucket", hot_bucket);
    for (int i = 0; i < 3 * n; ++i) add('F', i, 20 * kMs, tag_ + ":hotwindow", hot_window);
  }
  // Through the RESP door: MULTI INCR EXPIRE EXEC and an EVAL doing the same, in turn.
  if (opt_.load == Load::kDoors) {
    for (int i = 0; i < 2 * n; ++i) add('R', i, 50 * kMs, tag_ + ":resp", LimitSpec{});
    for (int i = 0; i < n; ++i) add('S', i, 5 * kMs, tag_ + ":news", LimitSpec{});
    for (int i = 0; i < 2; ++i) add('P', i, 50 * kMs, tag_ + ":news", LimitSpec{});
    // Through the gateway door's translation: a route's calls on every node, one counter.
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("floodgate-sim-rls." + std::to_string(::getpid()) + "." +
                               std::to_string(seed_) + ".yaml"))
                                 .string();
    std::ofstream(path) << "domain: sim\ndescriptors:\n  - key: route\n    rate_limit: {unit: "
                           "second, requests_per_unit: "
                        << kGatewayLimit << "}\n";
    rls_rules_ = std::make_unique<RlsRules>(path);
    const Status loaded = rls_rules_->reload();
    std::error_code ec;
    std::filesystem::remove(path, ec);
    check(loaded.ok(), "the gateway door's rules: " + (loaded.ok() ? "" : loaded.error()));
    for (int i = 0; i < n; ++i) add('G', i, 50 * kMs, tag_, LimitSpec{});
  }
  for (Client& c : clients_) {  // (views into the clients' own words, now they stay put)
    if (c.kind != 'd' && c.kind != 'm') continue;
    c.words = {"incr", c.key, "expire", c.key, "3600"};
    c.incr = {c.words[0], c.words[1]};
    c.expire = {c.words[2], c.words[3], c.words[4]};
  }
}

void Run::issue(int c) {
  if (stopped_) return;
  Client& cl = clients_[c];
  if (cl.kind == 'u' && cl.conn != 0) return close_connection(c);
  if (cl.kind == 'R') return issue_resp(c);
  if (cl.kind == 'S') return issue_sub(c);
  if (cl.kind == 'P') return issue_pub(c);
  if (cl.kind == 'G') return issue_gateway(c);
  SimNode& sn = world_.node(cl.node);
  const int64_t t0 = world_.now();
  std::vector<Request> reqs(1);
  Request& r = reqs[0];
  r.key = cl.key;
  r.spec = cl.spec;
  Door door;
  char kind = cl.kind;
  switch (cl.kind) {
    case 'a':
    case 'o':
      if (cl.lease != 0) {
        kind = cl.kind == 'a' ? 'r' : 'p';
        r.verb = Verb::kRelease;
        r.lease = cl.lease;
      } else {
        r.verb = Verb::kAcquire;
        if (cl.kind == 'a') r.holder = cl.holder;
      }
      break;
    case 'u':  // a connection opens and takes a lease BOUND to it
      r.verb = Verb::kAcquire;
      r.bound = true;
      cl.conn = next_conn_++;
      cl.conn_starts = sn.starts;
      cl.acquire_start = t0;
      door.client_id = cl.conn;
      break;
    case 'v':
      if (cl.ticket != 0) {
        kind = world_.rng()() % 4 != 0 ? 'k' : 'x';  // mostly kept, sometimes given back
        r.verb = kind == 'k' ? Verb::kCommit : Verb::kCancel;
        r.lease = cl.ticket;
      } else {
        r.verb = Verb::kReserve;
        r.ttl_ms = kReserveTtlMs;
      }
      break;
    case 'd':    // INCR, and EXPIRE once INCR has made the key
    case 'm': {  // MULTI INCR EXPIRE EXEC, replication: sync
      r.verb = Verb::kData;
      r.data = DataCmd::kIncr;
      r.args = &cl.incr;
      r.key = cl.incr[1];
      r.spec.sync = cl.kind == 'm';
      if (cl.kind == 'd' && cl.expire_next) {
        kind = 'e';
        r.data = DataCmd::kExpire;
        r.args = &cl.expire;
      }
      if (cl.kind == 'm') {
        r.txn = 1;
        Request e = r;
        e.data = DataCmd::kExpire;
        e.args = &cl.expire;
        reqs.push_back(e);
      }
      break;
    }
    case 'z':  // a take that waits for its admission
      r.verb = Verb::kTake;
      r.wait_ms = kWaitMs;
      break;
    case 'j':  // a take, or (one in four) a cost charged afterwards
      r.verb = Verb::kTake;
      if (world_.rng()() % 4 == 0) {
        kind = 'J';
        r.verb = Verb::kAdjust;
        r.cost = kDebtCharge;
      }
      break;
    default:
      r.verb = Verb::kTake;
      if (cl.kind == 'h') {
        Request twin = r;
        twin.key = cl.twin;
        twin.spec.shadow = false;
        reqs.push_back(twin);
      }
  }
  const size_t op = hist_.open(kind, c, cl.node, t0);
  if (!sn.up()) {  // connection refused: it did not happen
    hist_.close(op, t0, Res::kFail);
    if (kind == 'r' || kind == 'p') cl.lease = 0;
    if (kind == 'k' || kind == 'x') cl.ticket = 0;
    if (kind == 'e') cl.expire_next = false;
    cl.conn = 0;
    next(c, cl.period_ns);
    return;
  }
  Services& svc = sn.node->services();
  if (cl.kind == 'H' || cl.kind == 'F') watch_slices(cl.node);
  if (cl.kind == 'A') {
    take_all(svc, svc.lane(), cl.all, 1, nullptr, door, [this, c, op](TakeAllResult r) {
      Outcome o;
      if (!r.error.empty()) {
        o.code = Code::kError;
        o.error = "takeall";
      }
      o.decision.allowed = r.allowed;
      std::vector<Outcome> out{o};
      done(c, op, out);
    });
  } else {
    RequestJob::start(svc, svc.lane(), std::move(reqs), door, nullptr,
                      [this, c, op](std::vector<Outcome>& out) { done(c, op, out); });
  }
  world_.at(t0 + kClientTimeoutNs, [this, c, op] {
    if (!hist_.close(op, world_.now(), Res::kInfo)) return;
    Client& cl = clients_[c];
    const char k = hist_.ops()[op].kind;
    if (k == 'r' || k == 'p') cl.lease = 0;
    if (k == 'k' || k == 'x') cl.ticket = 0;
    if (k == 'e') cl.expire_next = false;
    next(c, 0);  // ('u': the connection closes next)
  });
}

void Run::watch_slices(int node) {
  SimNode& sn = world_.node(node);
  HotSlices& hs = sn.node->services().slices;
  if (hs.observe) return;
  hs.observe = [this, node](std::string_view key, int64_t tokens, int64_t expires_ns) {
    auto k = std::make_pair(node, std::string(key));
    if (expires_ns == 0) {
      asking_[k] = world_.now();
      return;
    }
    auto it = asking_.find(k);
    const int64_t asked = it == asking_.end() ? world_.now() : it->second;
    const int64_t left = expires_ns - world_.node(node).clock->now_ns();
    const char kind = key.size() >= 6 && key.substr(key.size() - 6) == "window" ? 'F' : 'H';
    slices_.push_back({kind, asked, world_.now() + left, tokens});
  };
}

int64_t Run::slices_outstanding(char kind, int64_t t) const {
  int64_t sum = 0;
  for (const Slice& s : slices_)
    sum += s.kind == kind && s.asked < t && s.expires > t ? s.tokens : 0;
  return sum;
}

RlsTranslator& Run::gateway_of(int node) {
  SimNode& sn = world_.node(node);
  if (gateways_.size() <= static_cast<size_t>(node)) gateways_.resize(node + 1);
  Gateway& g = gateways_[node];
  if (!g.translate || g.starts != sn.starts) {
    g.starts = sn.starts;
    g.translate = std::make_shared<RlsTranslator>(sn.node->services(), *rls_rules_, "default", true,
                                                  std::make_shared<RlsKeys>(1000));
  }
  return *g.translate;
}

void Run::issue_gateway(int c) {
  Client& cl = clients_[c];
  SimNode& sn = world_.node(cl.node);
  const int64_t t0 = world_.now();
  const size_t op = hist_.open('G', c, cl.node, t0);
  if (!sn.up() || !rls_rules_) {  // connection refused
    hist_.close(op, t0, Res::kFail);
    next(c, cl.period_ns);
    return;
  }
  struct Call {
    RlsCallState state;
    envoy::service::ratelimit::v3::RateLimitResponse response;
    std::shared_ptr<RlsTranslator> translate;  // (kept while the call is out)
  };
  auto call = std::make_shared<Call>();
  gateway_of(cl.node);
  call->translate = gateways_[cl.node].translate;
  call->state.response = &call->response;
  call->state.request.set_domain("sim");
  auto* e = call->state.request.add_descriptors()->add_entries();
  e->set_key("route");
  e->set_value(cl.key);  // (the run's hash tag: the counter's key is in the hot slot)
  const RlsStatus prepared = call->translate->prepare(call->state);
  check(prepared.ok(), "the gateway door refused a call: " + prepared.message);
  if (!prepared.ok() || call->state.requests.size() != 1) {
    hist_.close(op, t0, Res::kFail);
    next(c, cl.period_ns);
    return;
  }
  Services& svc = sn.node->services();
  RequestJob::start(
      svc, svc.lane(), call->state.requests, Door{}, nullptr,
      [this, c, op, call](std::vector<Outcome>& out) {
        if (hist_.ops()[op].done) return;  // (the client gave up on it)
        const RlsStatus st = call->translate->answer(call->state, out.data());
        Res res = Res::kInfo;  // (a status: it may have been counted)
        if (st.ok()) {
          res =
              call->response.overall_code() == envoy::service::ratelimit::v3::RateLimitResponse::OK
                  ? Res::kOk
                  : Res::kDeny;
        } else {
          check(st.code == RlsStatusCode::kUnavailable,
                "the gateway door answered a status a fault cannot cause: " + st.message);
        }
        hist_.close(op, world_.now(), res);
        next(c, clients_[c].period_ns);
      });
  world_.at(t0 + kClientTimeoutNs, [this, c, op] {
    if (hist_.close(op, world_.now(), Res::kInfo)) next(c, 0);
  });
}

void Run::issue_resp(int c) {
  Client& cl = clients_[c];
  SimNode& sn = world_.node(cl.node);
  const int64_t t0 = world_.now();
  const size_t op = hist_.open('R', c, cl.node, t0);
  if (!sn.up()) {  // connection refused
    hist_.close(op, t0, Res::kFail);
    cl.resp.reset();
    next(c, cl.period_ns);
    return;
  }
  connect_resp(cl);
  const bool txn = cl.sent++ % 2 == 0;
  cl.resp->send(txn ? command({"MULTI"}) + command({"INCR", cl.key}) +
                          command({"EXPIRE", cl.key, "3600"}) + command({"EXEC"})
                    : command({"EVAL", kRespScript, "1", cl.key}));
  read_resp(c, op, txn ? 4 : 1, cl.resp, t0);
}

// Reads the replies to one request as they come (every virtual millisecond), then judges
// them: INCR's count, an unavailable owner's error (unknown), or any other error (the
// run fails: this load cannot cause one).
void Run::read_resp(int c, size_t op, size_t replies, std::shared_ptr<MemoryClient> conn,
                    int64_t t0) {
  world_.at(world_.now() + kMs, [this, c, op, replies, conn, t0] {
    Client& cl = clients_[c];
    auto give_up = [&] {
      hist_.close(op, world_.now(), Res::kInfo);
      hang_up(c, conn);
    };
    if (cl.resp != conn) return give_up();
    cl.rbuf += conn->take();
    std::vector<std::string> got;
    size_t pos = 0;
    while (got.size() < replies) {
      const size_t end = resp_end(cl.rbuf, pos);
      if (end == std::string::npos) break;
      got.push_back(cl.rbuf.substr(pos, end - pos));
      pos = end;
    }
    if (got.size() < replies) {
      if (conn->closed_by_node() || world_.now() - t0 > kClientTimeoutNs) return give_up();
      return read_resp(c, op, replies, conn, t0);
    }
    cl.rbuf.erase(0, pos);
    const std::string& last = got.back();
    bool ok = replies == 1 ? last.rfind(":", 0) == 0
                           : got[0] == "+OK\r\n" && got[1] == "+QUEUED\r\n" &&
                                 got[2] == "+QUEUED\r\n" && last.rfind("*2\r\n:", 0) == 0;
    if (ok) {
      const size_t colon = last.find(':');
      hist_.close(op, world_.now(), Res::kOk, false, std::atoll(last.c_str() + colon + 1));
    } else {
      std::string all;
      for (const auto& g : got) all += g;
      if (!unavailable(all)) check(false, "an error reply through the RESP door: " + all);
      hist_.close(op, world_.now(), Res::kInfo);
    }
    next(c, cl.period_ns);
  });
}

void Run::connect_resp(Client& cl) {
  // A connection the node closed, or to its previous process, is opened again.
  const SimNode& sn = world_.node(cl.node);
  if (cl.resp && !cl.resp->closed_by_node() && cl.conn_starts == sn.starts) return;
  if (cl.resp) cl.resp->close();
  cl.resp = std::make_shared<MemoryClient>();
  world_.connect(cl.node, *cl.resp);
  cl.conn_starts = sn.starts;
  cl.rbuf.clear();
}

void Run::hang_up(int c, const std::shared_ptr<MemoryClient>& conn) {
  Client& cl = clients_[c];
  if (cl.resp == conn) {
    conn->close();
    cl.resp.reset();
  }
  next(c, cl.period_ns);
}

void Run::end_subscription(Client& cl, int c) {
  if (cl.sub_since >= 0) subscribed_.push_back({c, cl.sub_since, world_.now()});
  cl.sub_since = -1;
  if (cl.resp) cl.resp->close();
  cl.resp.reset();
  cl.rbuf.clear();
}

// A subscriber: (re)connects and subscribes, then reads what is pushed every 5 ms.
void Run::issue_sub(int c) {
  Client& cl = clients_[c];
  SimNode& sn = world_.node(cl.node);
  if (cl.resp && (!sn.up() || cl.resp->closed_by_node() || cl.conn_starts != sn.starts)) {
    end_subscription(cl, c);
  }
  if (!cl.resp && sn.up()) {
    cl.resp = std::make_shared<MemoryClient>();
    world_.connect(cl.node, *cl.resp);
    cl.conn_starts = sn.starts;
    ++cl.conn_no;
    cl.resp->send(command({"SUBSCRIBE", cl.key}));
  }
  if (cl.resp) {
    cl.rbuf += cl.resp->take();
    size_t pos = 0;
    for (size_t end; (end = resp_end(cl.rbuf, pos)) != std::string::npos; pos = end) {
      const std::string v = cl.rbuf.substr(pos, end - pos);
      if (v.rfind("*3\r\n$9\r\nsubscribe\r\n", 0) == 0) {
        const std::string confirm = "*3\r\n$9\r\nsubscribe\r\n$" + std::to_string(cl.key.size()) +
                                    "\r\n" + cl.key + "\r\n:1\r\n";
        check(v == confirm, "a subscription's confirmation: " + v);
        if (cl.sub_since < 0) cl.sub_since = world_.now();
        continue;
      }
      const std::string head =
          "*3\r\n$7\r\nmessage\r\n$" + std::to_string(cl.key.size()) + "\r\n" + cl.key + "\r\n$";
      int pub = -1;
      unsigned long long seq = 0;
      const size_t body = v.find("\r\n", head.size());
      if (v.rfind(head, 0) != 0 || body == std::string::npos ||
          std::sscanf(v.c_str() + body + 2, "P%d:%llu", &pub, &seq) != 2) {
        check(false, "a push to a subscriber: " + v);
        continue;
      }
      delivered_.push_back({c, cl.conn_no, pub, seq});
    }
    cl.rbuf.erase(0, pos);
  }
  next(c, cl.period_ns);
}

// A publisher: PUBLISH the channel "P<client>:<number>", one at a time.
void Run::issue_pub(int c) {
  Client& cl = clients_[c];
  SimNode& sn = world_.node(cl.node);
  if (!sn.up()) return next(c, cl.period_ns);  // connection refused
  connect_resp(cl);
  const uint64_t seq = ++cl.seq;
  published_.push_back({c, seq, world_.now(), -1});
  cl.resp->send(command({"PUBLISH", cl.key, "P" + std::to_string(c) + ":" + std::to_string(seq)}));
  read_pub(c, published_.size() - 1, cl.resp, world_.now());
}

void Run::read_pub(int c, size_t rec, std::shared_ptr<MemoryClient> conn, int64_t t0) {
  world_.at(world_.now() + kMs, [this, c, rec, conn, t0] {
    Client& cl = clients_[c];
    auto give_up = [&] { hang_up(c, conn); };
    if (cl.resp != conn) return give_up();
    cl.rbuf += conn->take();
    const size_t end = resp_end(cl.rbuf, 0);
    if (end == std::string::npos) {
      if (conn->closed_by_node() || world_.now() - t0 > kClientTimeoutNs) return give_up();
      return read_pub(c, rec, conn, t0);
    }
    const std::string reply = cl.rbuf.substr(0, end);
    cl.rbuf.erase(0, end);
    if (reply[0] == ':') {
      published_[rec].answered = world_.now();
    } else if (!unavailable(reply)) {
      check(false, "an error reply to PUBLISH: " + reply);
    }
    next(c, cl.period_ns);
  });
}

Run::PubsubFigures Run::check_pubsub(const std::vector<std::pair<int64_t, int64_t>>& healthy,
                                     int64_t end) {
  PubsubFigures f;
  // Never twice, and per subscriber connection in each publisher's order.
  std::set<std::tuple<int, int, uint64_t>> seen;
  std::map<std::tuple<int, int, int>, uint64_t> last;  // (sub, conn, pub) -> seq
  for (const Delivered& d : delivered_) {
    if (!seen.insert({d.sub, d.pub, d.seq}).second) {
      check(false, "a message delivered twice: P" + std::to_string(d.pub) + ":" +
                       std::to_string(d.seq) + " to S" + std::to_string(d.sub));
    }
    uint64_t& l = last[{d.sub, d.conn_no, d.pub}];
    if (d.seq <= l) {
      check(false, "messages delivered out of their publisher's order: P" + std::to_string(d.pub) +
                       ":" + std::to_string(d.seq) + " after :" + std::to_string(l));
    }
    l = std::max(l, d.seq);
  }
  // While healthy: a message answered reaches every subscriber subscribed before it was
  // sent and still connected a second after it was answered.
  constexpr int64_t kDeliveryNs = kS;
  for (const Published& p : published_) {
    if (p.answered < 0) continue;
    bool calm = false;
    for (const auto& [a, b] : healthy)
      calm = calm || (a <= p.sent && p.answered + kDeliveryNs <= b);
    if (!calm) continue;
    std::set<int> subs;
    for (const Subscribed& s : subscribed_) {
      const int64_t to = s.to < 0 ? end : s.to;
      if (s.from <= p.sent && to >= p.answered + kDeliveryNs) subs.insert(s.sub);
    }
    for (int s : subs) {
      ++f.expected;
      if (seen.count({s, p.pub, p.seq})) {
        ++f.delivered;
      } else {
        check(false, "a message published while healthy never reached a subscriber: P" +
                         std::to_string(p.pub) + ":" + std::to_string(p.seq) + " to S" +
                         std::to_string(s));
      }
    }
  }
  return f;
}

void Run::done(int c, size_t op, const std::vector<Outcome>& out) {
  Client& cl = clients_[c];
  const Op& rec = hist_.ops()[op];
  if (rec.done) return;  // the client gave up on it
  const Outcome& o = out[0];
  Res res = Res::kInfo;
  bool fail_mode = false;
  int64_t value = 0;
  if (o.ok()) {
    fail_mode = o.unavailable != FailMode::kError;
    switch (rec.kind) {
      case 'a':
      case 'o':
      case 'u':
        res = o.acquire.granted ? Res::kOk : Res::kDeny;
        value = static_cast<int64_t>(o.acquire.lease_id);
        break;
      case 'r':
      case 'p':
      case 'k':
      case 'x':
        res = Res::kOk;
        value = o.value;
        break;
      case 'd':
      case 'e':
      case 'm':
        // A transaction's replies are its commands' (INCR's first); an error reply did not
        // happen as asked: the op stays unknown, and the run fails (this load has none).
        if (o.reply && !o.reply->is_error() && !o.reply->empty()) {
          res = Res::kOk;
          value = o.reply->items[0].n;
        } else {
          check(false, std::string("an error reply to ") + rec.kind + ": " +
                           (o.reply && !o.reply->empty() ? o.reply->items[0].s : "none"));
        }
        break;
      case 'A':  // (an error: it may have been counted until its refunds arrive: unknown)
        res = o.allowed() ? Res::kOk : Res::kDeny;
        break;
      case 'z':  // admitted when due (its door holds the answer): how long after the answer
        res = o.allowed() ? Res::kOk : Res::kDeny;
        value = o.allowed() ? o.decision.wait_ns : 0;
        break;
      case 'y':  // a denial's retry-after: until the local midnight
        res = o.allowed() ? Res::kOk : Res::kDeny;
        value =
            o.allowed() || o.unavailable != FailMode::kError ? -1 : o.decision.retry_after_ns / kMs;
        break;
      case 'J':  // a charge: always made; the state it left (remaining below zero: owed)
        res = Res::kOk;
        value = o.decision.remaining;
        break;
      case 'h': {  // the shadow log: what it would have denied, and its twin's answer
        res = o.allowed() ? Res::kOk : Res::kDeny;
        value = o.shadow_denied ? 1 : 0;
        const Outcome& t = out[1];
        if (t.ok() && t.unavailable == FailMode::kError && o.unavailable == FailMode::kError &&
            o.shadow_denied != !t.decision.allowed) {
          ++twin_disagreed_;
        }
        break;
      }
      default:
        res = o.allowed() ? Res::kOk : Res::kDeny;
        value = static_cast<int64_t>(o.ticket);
    }
    if (o.unavailable == FailMode::kClosed) res = Res::kDeny;
  }
  hist_.close(op, world_.now(), res, fail_mode, value);
  auto hold = [this] { return uniform(world_.rng(), 20, 120) * kMs; };
  switch (rec.kind) {
    case 'a':
    case 'o':
      if (res == Res::kOk) {
        cl.lease = static_cast<uint64_t>(value);
        // A holder's lease is released; one without a holder, half the time, is left to
        // expire (its client gone).
        if (rec.kind == 'o' && world_.rng()() % 2 == 0) cl.lease = 0;
        next(c, hold());  // hold it, then release
        return;
      }
      break;
    case 'u':  // held while the connection is open (renewed by its node), then closed
      next(c, res == Res::kOk ? uniform(world_.rng(), 100, 1500) * kMs : 0);
      return;
    case 'r':
    case 'p':
      cl.lease = 0;
      break;
    case 'v':
      if (res == Res::kOk && value != 0) {
        cl.ticket = static_cast<uint64_t>(value);
        next(c, hold());  // commit or cancel it then
        return;
      }
      break;
    case 'k':
    case 'x':
      cl.ticket = 0;
      break;
    case 'd':
      if (res == Res::kOk && value == 1) {
        cl.expire_next = true;
        next(c, 0);
        return;
      }
      break;
    case 'e':
      cl.expire_next = false;
      break;
    case 'z':  // (its answer comes when it is due; the next request after that)
      next(c, value + cl.period_ns);
      return;
  }
  next(c, cl.period_ns);
}

void Run::close_connection(int c) {
  Client& cl = clients_[c];
  SimNode& sn = world_.node(cl.node);
  const int64_t now = world_.now();
  // Definitely held until the close, or until a fault since it was taken.
  int64_t held_to = now;
  for (const Span& s : spans_) {
    const int64_t settled = s.converged >= 0 ? s.converged + kSettleNs : INT64_MAX;
    if (s.start <= now && settled >= cl.acquire_start)
      held_to = std::min(held_to, std::max(s.start, cl.acquire_start));
  }
  // (A close is always recorded: it is when the client stopped counting on the lease.)
  const size_t op = hist_.open('q', c, cl.node, held_to);
  if (sn.up() && sn.starts == cl.conn_starts) release_bound_leases(sn.node->services(), cl.conn);
  hist_.close(op, now, Res::kOk);
  cl.conn = 0;
  next(c, cl.period_ns);
}

void Run::cut_between(const std::vector<int>& a, const std::vector<int>& b, bool both_ways) {
  for (int x : a) {
    for (int y : b) {
      const std::string ax = world_.node(x).bus_addr(), ay = world_.node(y).bus_addr();
      world_.peers().cut(ay, ax);
      world_.datagrams().cut(ay, ax);
      if (both_ways) {
        world_.peers().cut(ax, ay);
        world_.datagrams().cut(ax, ay);
      }
    }
  }
}

void Run::watch_detection(int victim, int64_t since) {
  const std::string id = world_.node(victim).id;
  if (world_.now() == since) crashed_at_.emplace_back(since, victim);
  int64_t bound =
      up_nodes().size() + world_.node(victim).up() <= 2 ? kDetectPairBoundNs : kDetectBoundNs;
  for (const auto& [t, other] : crashed_at_) {
    if (other != victim && t > since - kDetectBoundNs && t < since + kDetectBoundNs) {
      bound = std::max(bound, kDetectTwoBoundNs);
    }
  }
  world_.at(world_.now() + 10 * kMs, [this, victim, since, id, bound] {
    if (world_.node(victim).up() && !world_.node(victim).paused) return;  // back before seen
    bool all = true;
    for (int i : up_nodes()) {
      // (a node leaving has said goodbye: the others no longer tell it who died)
      if (i == victim || world_.node(i).paused || leaving_.count(i)) continue;
      const auto st = world_.state_seen(i, id);
      all = all && (!st || *st == MemberState::kDead || *st == MemberState::kLeft);
    }
    if (all) {
      const int64_t took = world_.now() - since;
      detect_worst_ = std::max(detect_worst_, took);
      check(took <= bound, "crashed " + id + " marked dead by all in " +
                               std::to_string(took / kMs) + " ms (bound " +
                               std::to_string(bound / kMs) + ")");
      return;
    }
    if (world_.now() - since > 2 * bound) {
      check(false, "crashed " + id + " not marked dead by all in 6 s");
      return;
    }
    watch_detection(victim, since);
  });
}

// The side of a split without the quorum (a minority; of two halves, the one without the
// lowest id: SlotTable::quorum) must stop giving answers of its own: watched when it is one
// node — the owner cut off from most, or, of two nodes, whichever is the higher id.
void Run::watch_cut_off(size_t span, const std::vector<int>& a, const std::vector<int>& b) {
  auto lacks = [&](const std::vector<int>& side) {
    const size_t n = a.size() + b.size();
    if (2 * side.size() != n) return 2 * side.size() < n;
    std::string lowest = world_.node(a.front()).id;
    for (int x : a) lowest = std::min(lowest, world_.node(x).id);
    for (int x : b) lowest = std::min(lowest, world_.node(x).id);
    for (int x : side)
      if (world_.node(x).id == lowest) return false;
    return true;
  };
  if (lacks(a)) {
    spans_[span].isolated = a.front();
  } else if (b.size() == 1 && lacks(b)) {
    spans_[span].isolated = b.front();
  } else {
    return;
  }
  watch_first_dead(span);
}

void Run::watch_first_dead(size_t span) {
  world_.at(world_.now() + 10 * kMs, [this, span] {
    Span& s = spans_[span];
    if (s.first_dead >= 0 || world_.now() >= s.end) return;
    const std::string id = world_.node(s.isolated).id;
    for (int i : up_nodes()) {
      if (i == s.isolated) continue;
      if (world_.state_seen(i, id) == MemberState::kDead) s.first_dead = world_.now();
    }
    if (s.first_dead < 0) watch_first_dead(span);
  });
}

void Run::watch_convergence(size_t span) {
  world_.at(world_.now() + 50 * kMs, [this, span] {
    if (world_.formed()) {
      spans_[span].converged = world_.now();
      return;
    }
    if (world_.now() - spans_[span].end > kConvergeBoundNs) return;  // judged at the end
    watch_convergence(span);
  });
}

void Run::watch_no_false_dead(int64_t until) {
  world_.at(world_.now() + 100 * kMs, [this, until] {
    for (int i : up_nodes()) {
      for (int j : up_nodes()) {
        if (i != j && world_.state_seen(i, world_.node(j).id) == MemberState::kDead) {
          check(false,
                world_.node(i).id + " declared " + world_.node(j).id + " dead under loss alone");
          return;
        }
      }
    }
    if (world_.now() < until) watch_no_false_dead(until);
  });
}

// A rolling restart, as a Kubernetes rollout of a StatefulSet does it: node order[k] is
// stopped gracefully (SIGTERM: it hands its slots over), comes back a second later under
// its id with its disk, and the next goes once the cluster has formed with it again.
void Run::roll(size_t span, std::vector<int> order, size_t k) {
  if (k == order.size()) return heal(span);
  const int victim = order[k];
  spans_[span].label += (k == 0 ? " " : ",") + world_.node(victim).id;
  if (!world_.node(victim).up()) return roll(span, std::move(order), k + 1);
  stop_gracefully(victim, [this, span, order, k, victim] {
    world_.at(world_.now() + kS, [this, span, order, k, victim] {
      world_.start(victim);
      const int64_t until = world_.now() + 20 * kS;
      auto back = std::make_shared<std::function<void()>>();
      *back = [this, span, order, k, until, back] {
        if (!world_.formed() && world_.now() < until) {
          world_.at(world_.now() + 50 * kMs, *back);
          return;
        }
        *back = nullptr;
        roll(span, order, k + 1);
      };
      world_.at(world_.now() + 50 * kMs, *back);
    });
  });
}

// SIGTERM: the node leaves (hands its slots over, and stays until they are held elsewhere:
// Cluster::leave), then its process ends and `then` runs. A leave not done in 60 s fails the
// seed (the node would refuse to exit: the operator forces it, which the bounds do not cover).
void Run::stop_gracefully(int victim, std::function<void()> then) {
  world_.node(victim).node->begin_leave();
  leaving_.insert(victim);
  const int64_t began = world_.now();
  const int64_t give_up = began + 60 * kS;
  auto poll = std::make_shared<std::function<void()>>();
  *poll = [this, victim, began, give_up, poll, then = std::move(then)] {
    SimNode& v = world_.node(victim);
    if (v.up() && !v.node->left() && world_.now() < give_up) {
      world_.at(world_.now() + 10 * kMs, *poll);
      return;
    }
    if (v.up()) {
      check(world_.now() < give_up, "the leave of " + v.id + " not done in 60 s");
      leave_worst_ = std::max(leave_worst_, world_.now() - began);
    }
    world_.crash(victim);  // (its slots are handed over: nothing is left to save)
    leaving_.erase(victim);
    if (then) then();
    *poll = nullptr;
  };
  world_.at(world_.now() + 10 * kMs, *poll);
}

void Run::heal(size_t span) {
  world_.peers().heal();
  world_.datagrams().heal();
  world_.datagrams().set_weather(0, std::chrono::nanoseconds(0));
  world_.peers().set_delay(std::chrono::nanoseconds(0));
  spans_[span].end = world_.now();
  hist_.note("heal " + spans_[span].label);
  if (opt_.verbose) spdlog::warn("SIM healed {}", spans_[span].label);
  watch_convergence(span);
}

void Run::inject(Fault f, int64_t dur_ns) {
  const size_t span = spans_.size();
  spans_.emplace_back();
  Span& s = spans_.back();
  s.start = world_.now();
  s.end = s.start + dur_ns;
  s.label = name_of(f);
  int owner = world_.owner_of(hot_);
  std::vector<int> up = up_nodes();
  if (owner < 0) owner = up.front();
  std::vector<int> others;
  for (int i : up)
    if (i != owner) others.push_back(i);
  std::shuffle(others.begin(), others.end(), world_.rng());
  auto later = [&](std::function<void()> f2) {
    world_.at(world_.now() + dur_ns, [this, span, f2] {
      f2();
      heal(span);
    });
  };
  switch (f) {
    case Fault::kKill:     // its machine lost: it comes back with nothing on disk
    case Fault::kRestart:  // the process killed: it comes back with what it last saved
      s.owner_lost = true;
      s.label += " " + world_.node(owner).id;
      world_.crash(owner);
      if (f == Fault::kKill) world_.wipe_disk(owner);
      watch_detection(owner, world_.now());
      later([this, owner] { world_.start(owner); });
      break;
    case Fault::kBounce:  // killed, and its supervisor starts it again 200 ms later
      s.owner_lost = true;
      s.label += " " + world_.node(owner).id;
      world_.crash(owner);
      world_.at(world_.now() + 200 * kMs, [this, owner] { world_.start(owner); });
      later([] {});
      break;
    case Fault::kReboot: {  // every node at once, back after 1-2 s with what it saved
      s.owner_lost = true;
      for (int i : up) {
        // When its last good save was made, by its clock (which a clock fault may have moved
        // off the world's), in world time.
        Snapshotter* snap = world_.node(i).node->services().snapshots;
        const int64_t ago =
            snap ? world_.node(i).clock->now_ns() - snap->status().last_save_ms * kMs : 0;
        const int64_t at = snap && snap->status().saves_ok > 0 ? world_.now() - ago : 0;
        s.saved_at = s.saved_at < 0 ? at : std::min(s.saved_at, at);
        world_.crash(i);
      }
      s.label += " (saved " + std::to_string((world_.now() - s.saved_at) / kMs) + " ms before)";
      const int64_t down = uniform(world_.rng(), 1000, 2000) * kMs;
      s.end = world_.now() + down;
      world_.at(world_.now() + down, [this, span, up] {
        for (int i : up) world_.start(i);
        heal(span);
      });
      break;
    }
    case Fault::kDisk: {  // the owner's directory refuses writes (full, read-only): saves fail
      s.label += " " + world_.node(owner).id;
      s.disk_node = owner;
      Snapshotter* snap = world_.node(owner).node->services().snapshots;
      s.saves_failed_before = snap ? snap->status().saves_failed : 0;
      world_.break_disk(owner);
      later([this, owner, span] {
        world_.mend_disk(owner);
        Span& sp = spans_[span];
        sp.mended = world_.now();
        if (!world_.node(owner).up()) return;
        Snapshotter* sn = world_.node(owner).node->services().snapshots;
        if (sn) {
          sp.saves_failed_after = sn->status().saves_failed;
          sp.saves_ok_after_mend = sn->status().saves_ok;
        }
      });
      break;
    }
    case Fault::kRolling: {  // each node in turn (the healing is the last one back)
      std::sort(up.begin(), up.end());
      roll(span, up, 0);
      break;
    }
    case Fault::kPause:
      s.owner_lost = true;
      s.label += " " + world_.node(owner).id;
      world_.node(owner).paused = true;
      later([this, owner] { world_.node(owner).paused = false; });
      break;
    case Fault::kPartition:
    case Fault::kMinority: {
      std::vector<int> a = {owner};
      if (f == Fault::kMinority && !others.empty()) {
        // The owner and its replica (the next member in id order, not in the world's: a
        // joiner's id sorts beside the node it joined for; R = 2): one side holds every
        // copy of the hot key's slot.
        const int replica = replica_of(owner);
        others.erase(std::find(others.begin(), others.end(), replica));
        others.insert(others.begin(), replica);
      }
      const size_t k = f == Fault::kMinority ? 1 : up.size() / 2 > 0 ? up.size() / 2 - 1 : 0;
      for (size_t i = 0; i < k && i < others.size(); ++i) a.push_back(others[i]);
      std::vector<int> b(others.begin() + static_cast<long>(std::min(k, others.size())),
                         others.end());
      s.split_copies = f == Fault::kPartition;
      for (int x : a) s.label += (x == a.front() ? " " : ",") + world_.node(x).id;
      s.label += " |";
      for (int x : b) s.label += " " + world_.node(x).id;
      cut_between(a, b, true);
      watch_cut_off(span, a, b);
      later([] {});
      break;
    }
    case Fault::kOneWay:
      s.split_copies = true;
      s.label += ": " + world_.node(owner).id + " hears nobody";
      cut_between({owner}, others, false);
      watch_cut_off(span, {owner}, others);
      later([] {});
      break;
    case Fault::kLoss:
      world_.datagrams().set_weather(0.1, std::chrono::nanoseconds(0), world_.rng()());
      watch_no_false_dead(world_.now() + dur_ns);
      later([] {});
      break;
    case Fault::kDelay:
      world_.datagrams().set_weather(0, std::chrono::milliseconds(30), world_.rng()());
      world_.peers().set_delay(std::chrono::milliseconds(30), world_.rng()());
      later([] {});
      break;
    case Fault::kClock: {
      const int victim = up[world_.rng()() % up.size()];
      const int64_t step = uniform(world_.rng(), 5, 60) * kS * (world_.rng()() % 2 ? 1 : -1);
      world_.node(victim).clock->step(step);
      s.label += " " + world_.node(victim).id + " " + std::to_string(step / kS) + "s";
      s.end = world_.now();
      heal(span);
      break;
    }
    case Fault::kJoin: {
      const int n = world_.add_node();
      world_.start(n);
      s.label += " " + world_.node(n).id;
      s.end = world_.now();
      heal(span);
      break;
    }
    case Fault::kOverlap:
    case Fault::kKillLeave:
    case Fault::kKillJoin:
    case Fault::kLeaveLeave:
    case Fault::kKillKill:
    case Fault::kPartitionLeave:
    case Fault::kRestartKill:
      overlap(f == Fault::kOverlap ? draw_overlap(up.size()) : f, span, owner, dur_ns);
      break;
    case Fault::kLeave: {
      // A graceful leave; the node comes back (under its id) when the fault ends, so the
      // cluster stays within the stated 3-5 nodes for what follows.
      if (up.size() <= 2) {
        s.label += ": too few nodes, none";
        s.end = world_.now();
        heal(span);
        break;
      }
      const int victim = up[world_.rng()() % up.size()];
      s.label += " " + world_.node(victim).id;
      stop_gracefully(victim, nullptr);
      later([this, victim] { start_when_down(victim); });
      break;
    }
  }
  hist_.note("fault " + s.label);
  if (opt_.verbose) spdlog::warn("SIM fault {}", s.label);
}

void Run::start_when_down(int i) {
  if (!world_.node(i).up()) return world_.start(i);
  world_.at(world_.now() + 50 * kMs, [this, i] { start_when_down(i); });
}

int Run::replica_of(int owner) {
  std::vector<std::pair<std::string, int>> ids;
  for (int i : up_nodes()) ids.push_back({world_.node(i).id, i});
  std::sort(ids.begin(), ids.end());
  for (size_t k = 0; k < ids.size(); ++k) {
    if (ids[k].second == owner) return ids[(k + 1) % ids.size()].second;
  }
  return owner;
}

// The pairs this cluster can meet within its stated bounds: a majority of the table left
// alive, and no more crashes than copies less one (gossip/DESIGN-NOTES.md, "Two faults").
Fault Run::draw_overlap(size_t up) {
  std::vector<Fault> can = {Fault::kKillJoin};
  if (up >= 3) can.push_back(Fault::kLeaveLeave);
  if (up >= 4) {
    can.push_back(Fault::kKillLeave);
    can.push_back(Fault::kPartitionLeave);
  }
  if (up >= 5) can.push_back(Fault::kRestartKill);
  if (up >= 5 && opt_.replicas >= 3) can.push_back(Fault::kKillKill);
  return can[world_.rng()() % can.size()];
}

void Run::overlap(Fault f, size_t span, int owner, int64_t dur_ns) {
  Span& s = spans_[span];
  s.label = name_of(f);
  const int replica = replica_of(owner);
  const int64_t gap = uniform(world_.rng(), 50, 1500) * kMs;
  const std::string gap_text = " +" + std::to_string(gap / kMs) + "ms ";
  // What comes back when the fault ends, and the healing after it.
  auto back_at_end = [this, span, dur_ns](std::vector<int> nodes) {
    world_.at(world_.now() + dur_ns, [this, span, nodes] {
      for (int i : nodes) start_when_down(i);
      heal(span);
    });
  };
  auto kill = [this](int victim, bool wipe) {
    world_.crash(victim);
    if (wipe) world_.wipe_disk(victim);
    watch_detection(victim, world_.now());
  };
  switch (f) {
    case Fault::kKillLeave: {
      // Either the owner dies and its replica — the last copy — leaves, or the replica dies
      // and the owner leaves, its leave table handing the slot to the dead one.
      const bool owner_dies = world_.rng()() % 2 == 0;
      const int dies = owner_dies ? owner : replica, leaves = owner_dies ? replica : owner;
      s.owner_lost = true;
      s.label += " " + world_.node(dies).id + gap_text + world_.node(leaves).id;
      kill(dies, true);
      world_.at(world_.now() + gap, [this, leaves] {
        if (world_.node(leaves).up()) stop_gracefully(leaves, nullptr);
      });
      back_at_end({dies, leaves});
      break;
    }
    case Fault::kKillJoin: {
      // The new node named to sort right after the owner: in the join's table it is the
      // owner's replica (the old replica's copy no longer kept), and the failover after it
      // gives it the owner's slots — their copy is elsewhere.
      s.owner_lost = true;
      s.label += " " + world_.node(owner).id + gap_text;
      kill(owner, true);
      const int n = world_.add_node(world_.node(owner).id + "j" + std::to_string(world_.size()));
      s.label += world_.node(n).id;
      world_.at(world_.now() + gap, [this, n] { world_.start(n); });
      back_at_end({owner});
      break;
    }
    case Fault::kLeaveLeave: {
      s.label += " " + world_.node(owner).id + gap_text + world_.node(replica).id;
      stop_gracefully(owner, nullptr);
      world_.at(world_.now() + gap, [this, replica] {
        if (world_.node(replica).up()) stop_gracefully(replica, nullptr);
      });
      back_at_end({owner, replica});
      break;
    }
    case Fault::kKillKill: {
      s.owner_lost = true;
      s.label += " " + world_.node(owner).id + gap_text + world_.node(replica).id;
      kill(owner, true);
      world_.at(world_.now() + gap, [this, span, replica, kill] {
        if (!world_.node(replica).up()) return;
        spans_[span].more_crashes.push_back(world_.now());
        kill(replica, true);
      });
      back_at_end({owner, replica});
      break;
    }
    case Fault::kRestartKill: {
      // The second victim: with two copies one not holding the hot slot's (the bound is one
      // crash per slot), with three its replica.
      int other = replica;
      if (opt_.replicas < 3) {
        std::vector<int> rest;
        for (int i : up_nodes())
          if (i != owner && i != replica && replica_of(i) != owner) rest.push_back(i);
        other = rest.empty() ? -1 : rest[world_.rng()() % rest.size()];
      }
      s.owner_lost = true;
      s.label +=
          " " + world_.node(owner).id + gap_text + (other >= 0 ? world_.node(other).id : "-");
      kill(owner, false);  // (back with what it saved)
      if (other >= 0) {
        world_.at(world_.now() + gap, [this, span, other, kill] {
          if (!world_.node(other).up()) return;
          spans_[span].more_crashes.push_back(world_.now());
          kill(other, true);
        });
        back_at_end({owner, other});
      } else {
        back_at_end({owner});
      }
      break;
    }
    case Fault::kPartitionLeave: {
      // The owner apart (a minority of one); a node of the majority, not the owner's
      // replica, leaves while the others decide the owner is gone.
      std::vector<int> rest;
      for (int i : up_nodes())
        if (i != owner) rest.push_back(i);
      std::vector<int> leavers;
      for (int i : rest)
        if (i != replica) leavers.push_back(i);
      const int leaves = leavers[world_.rng()() % leavers.size()];
      s.split_copies = true;
      s.label += " " + world_.node(owner).id + " |" + gap_text + world_.node(leaves).id;
      cut_between({owner}, rest, true);
      watch_cut_off(span, {owner}, rest);
      world_.at(world_.now() + gap, [this, leaves] {
        if (world_.node(leaves).up()) stop_gracefully(leaves, nullptr);
      });
      back_at_end({leaves});
      break;
    }
    default:
      break;
  }
}

bool Run::read_counter(const Client& c, int64_t& count, int64_t& start, int64_t& end) {
  const bool data = c.kind == 'd' || c.kind == 'm' || c.kind == 'R';
  // (A read the client stops waiting for may still finish: what it writes into outlives it.)
  struct Read {
    std::vector<std::string_view> get;
    bool got = false;
    Outcome out;
    DataReply reply;
  };
  for (int i : up_nodes()) {
    auto rd = std::make_shared<Read>();
    rd->get = {"get", c.key};
    Request r;
    r.key = c.key;
    if (data) {
      r.verb = Verb::kData;
      r.data = DataCmd::kGet;
      r.args = &rd->get;
    } else {
      r.verb = Verb::kPeek;
      r.spec = c.spec;
      r.spec.sync = false;
    }
    start = world_.now();
    Services& svc = world_.node(i).node->services();
    RequestJob::start(svc, svc.lane(), {r}, Door{}, rd, [rd](std::vector<Outcome>& o) {
      rd->got = true;
      rd->out = o[0];
      if (o[0].reply) rd->reply = *o[0].reply;
      rd->out.reply = nullptr;
    });
    for (int k = 0; k < 300 && !rd->got; ++k) world_.run_until(world_.now() + 10 * kMs);
    end = world_.now();
    const Outcome& out = rd->out;
    if (!rd->got || !out.ok() || out.unavailable != FailMode::kError) continue;
    if (!data) {
      count = out.decision.limit - out.decision.remaining;
      return true;
    }
    const DataReply& reply = rd->reply;
    if (reply.empty() || reply.is_error()) continue;
    count = reply.items[0].type == ReplyItem::Type::kNull ? 0 : std::stoll(reply.items[0].s);
    return true;
  }
  return false;
}

Verdict Run::go() {
  Verdict v;
  std::vector<int> all;
  for (int i = 0; i < opt_.nodes; ++i) {
    world_.start(i);
    all.push_back(i);
  }
  int64_t t = 0;
  while (!world_.formed() && t < kFormTimeoutNs) world_.run_until(t += 50 * kMs);
  if (!world_.formed()) {
    v.passed = false;
    v.line = "seed " + std::to_string(seed_) + " FAIL: the cluster did not form in 60 s";
    v.simulated_ns = world_.now();
    return v;
  }
  if (opt_.nodes == 2) {
    for (int i = 1; i < 100 && world_.owner_of(hot_) != 1; ++i) {
      tag_ = "{sim" + std::to_string(i) + "}";
      hot_ = tag_ + ":log";
    }
  }
  const int64_t load_start = world_.now();
  setup_clients();
  for (size_t c = 0; c < clients_.size(); ++c) {
    world_.at(load_start + uniform(world_.rng(), 0, clients_[c].period_ns),
              [this, c] { issue(static_cast<int>(c)); });
  }
  // Faults, one after another: each after a quiet stretch, healed, the cluster formed again.
  const int64_t load_end = load_start + opt_.seconds * kS;
  int64_t cursor = load_start + uniform(world_.rng(), 1, 3) * kS;
  const int n_faults = opt_.faults.empty() ? 0 : 1 + static_cast<int>(world_.rng()() % 2);
  for (int i = 0; i < n_faults && cursor < load_end - 5 * kS; ++i) {
    const Fault f = opt_.faults[world_.rng()() % opt_.faults.size()];
    const int64_t dur = uniform(world_.rng(), 4000, 7000) * kMs;
    world_.run_until(cursor);
    inject(f, dur);
    world_.run_until(world_.now() + dur);
    const size_t span = spans_.size() - 1;
    for (int64_t w = 0; w < kConvergeBoundNs + kS && spans_[span].converged < 0; w += 100 * kMs)
      world_.run_until(world_.now() + 100 * kMs);
    cursor = world_.now() + kSettleNs;
  }
  world_.run_until(std::max(load_end, cursor));
  // The end: the counters read with the load still running, then the load stops.
  struct Counter {
    char kind;
    bool sync;  // acknowledged means replicated: nothing may be lost
    int64_t count = -1, read_start = 0, read_end = 0;
    int64_t loss = 0, bound = 0;
  };
  std::vector<Counter> counters = {{'c', false}, {'s', true}};
  if (opt_.load != Load::kBasic) {
    counters.push_back({'v', false});
    counters.push_back({'d', false});
    counters.push_back({'m', true});
    counters.push_back({'A', false});
  }
  if (opt_.load == Load::kDoors) counters.push_back({'R', false});
  for (Counter& k : counters) {
    if (!read_counter(first_of(k.kind), k.count, k.read_start, k.read_end)) k.count = -1;
  }
  stopped_ = true;
  for (size_t c = 0; c < clients_.size(); ++c) {  // (subscribers read nothing from now on)
    if (clients_[c].kind == 'S') end_subscription(clients_[c], static_cast<int>(c));
  }
  world_.run_until(world_.now() + kClientTimeoutNs + kS);
  for (Client& cl : clients_) {  // (the RESP connections hang up while their nodes run)
    if (cl.resp) cl.resp->close();
  }
  world_.run_until(world_.now() + 10 * kMs);
  const int64_t end = world_.now();
  hist_.close_all(end);

  // The checks.
  const auto& ops = hist_.ops();
  std::vector<std::pair<int64_t, int64_t>> healthy;
  int64_t from = load_start;
  int64_t clock_stepped = end;  // from when the nodes' clocks may be off the world's
  for (const Span& s : spans_) {
    if (s.start > from) healthy.push_back({from, s.start});
    const int64_t back = s.converged >= 0 ? s.converged : end;
    from = std::max(from, back + kSettleNs);
    check(s.converged >= 0 && s.converged - s.end <= kConvergeBoundNs,
          "converged within 30 s after " + s.label);
    if (s.label.rfind("clock", 0) == 0) clock_stepped = std::min(clock_stepped, s.start);
  }
  if (end > from) healthy.push_back({from, end});

  // Over-admission, per limiter kind: none while healthy; across a lost owner (kill,
  // pause), from a window before it to the settled cluster after it, at most what it
  // possibly admitted in the last Δ. (Over-admission in a partition is a figure, as in
  // chaos/: the cut-off owner serves until it sees it has lost the quorum, and the other
  // side cannot have what it admitted meanwhile.)
  struct Limiter {
    char kind;
    const char* name;
    std::function<int64_t(int64_t, int64_t)> over;  // most over the bound inside [from, to]
    int64_t healthy = 0, all = 0;
    // Across a lost owner, beyond the last Δ's admissions: the slices it granted in that Δ
    // (their takes lost with it, their tokens spent by their holders).
    int64_t loss_extra = 0;
  };
  std::vector<Limiter> limiters;
  // At most `limit` in each window of the key's owner's clock: the world's windows until a
  // clock is stepped; then only the weaker rule holds, 2 limits in any window's span.
  auto by_owners_windows = [&](char kind, int64_t limit, int64_t window_ns) {
    return [&, kind, limit, window_ns](int64_t a, int64_t b) {
      int64_t over = 0;
      if (a < clock_stepped) {
        over = aligned_over_admission(ops, kind, limit, window_ns, a, std::min(b, clock_stepped));
      }
      if (b > clock_stepped) {
        over = std::max(
            over, over_admission(ops, kind, 2 * limit, window_ns, std::max(a, clock_stepped), b));
      }
      return over;
    };
  };
  limiters.push_back({'t', "sliding log", [&](int64_t a, int64_t b) {
                        return over_admission(ops, 't', kLimit, kWindowNs, a, b);
                      }});
  if (opt_.load != Load::kBasic) {
    limiters.push_back({'b', "token bucket", [&](int64_t a, int64_t b) {
                          return bucket_over_admission(ops, 'b', kBucketCap, kBucketRate, a, b);
                        }});
    limiters.push_back({'g', "gcra", [&](int64_t a, int64_t b) {
                          return bucket_over_admission(ops, 'g', kGcraBurst + 1, kGcraRate, a, b);
                        }});
    // A sliding window counter never counts more than its limit in the current window of
    // its node's clock (the previous window weighs at most the limit after a step).
    limiters.push_back({'w', "sliding window", by_owners_windows('w', kWindowLimit, kWindowNs)});
  }
  // Hot keys served from quota slices (api/COMMANDS.md, Quota slices): beyond the limit, at
  // most the slices outstanding — each node but the owner holds at most one live slice of a
  // key, of at most its share of the capacity (the members it divides by: at least n - 1
  // after a leave).
  if (has('H')) {
    const int64_t holders = static_cast<int64_t>(world_.size()) - 1;
    const int64_t divisor = std::max(1, opt_.nodes - 1);
    const int64_t bucket_bound = holders * std::max<int64_t>(1, kHotCap / divisor);
    const int64_t window_bound = holders * std::max<int64_t>(1, kHotWindowLimit / divisor);
    // Beyond the limit: the slices outstanding when the interval (the window) began — asked
    // for before it, alive after its start (their takes counted before it, or in flight).
    const Allowance out_h = [this](int64_t t) { return slices_outstanding('H', t); };
    const Allowance out_f = [this](int64_t t) { return slices_outstanding('F', t); };
    limiters.push_back({'H', "token bucket (hot, sliced)", [&, out_h](int64_t a, int64_t b) {
                          return bucket_over_admission(ops, 'H', kHotCap, kHotRate, a, b, 10 * kS,
                                                       out_h);
                        }});
    limiters.back().loss_extra = bucket_bound;
    // (the owner's windows until a clock is stepped; then 2 limits and every slice's share)
    limiters.push_back(
        {'F', "fixed window (hot, sliced)", [&, out_f, window_bound](int64_t a, int64_t b) {
           int64_t over = 0;
           if (a < clock_stepped) {
             over = aligned_over_admission(ops, 'F', kHotWindowLimit, kS, a,
                                           std::min(b, clock_stepped), out_f);
           }
           if (b > clock_stepped) {
             over = std::max(over, over_admission(ops, 'F', 2 * kHotWindowLimit + window_bound, kS,
                                                  std::max(a, clock_stepped), b));
           }
           return over;
         }});
    limiters.back().loss_extra = window_bound;
    uint64_t sliced = 0;
    for (size_t i = 0; i < world_.size(); ++i) {
      if (world_.node(i).up()) sliced += world_.node(i).node->services().slices.admitted.load();
    }
    check(sliced > 0, "the hot load: no take was admitted from a quota slice");
    // (the figure: the most each went over its limit while healthy, against its bound)
    std::ostringstream f;
    int64_t over_h = 0, over_f = 0;
    for (const auto& [a, b] : healthy) {
      over_h = std::max(over_h, bucket_over_admission(ops, 'H', kHotCap, kHotRate, a, b));
      over_f = std::max(over_f, aligned_over_admission(ops, 'F', kHotWindowLimit, kS, a,
                                                       std::min(b, clock_stepped)));
    }
    int64_t most_h = 0, most_f = 0;  // the most outstanding at once
    for (const Slice& sl : slices_) {
      most_h = std::max(most_h, slices_outstanding('H', sl.asked + 1));
      most_f = std::max(most_f, slices_outstanding('F', sl.asked + 1));
    }
    f << "  sliced " << sliced << " (over H " << over_h << ", at most " << most_h
      << " outstanding; F " << over_f << ", " << most_f << ")";
    hot_figures_ = f.str();
  }
  // The gateway door's fixed window (its counter's, 15 a second of the owner's clock).
  if (has('G')) {
    limiters.push_back(
        {'G', "gateway door (fixed window)", by_owners_windows('G', kGatewayLimit, kS)});
    int64_t admitted = 0, denied = 0;
    for (const Op& o : ops) {
      admitted += o.kind == 'G' && o.res == Res::kOk;
      denied += o.kind == 'G' && o.res == Res::kDeny;
    }
    check(admitted > 0 && denied > 0, "the gateway door admitted " + std::to_string(admitted) +
                                          " and denied " + std::to_string(denied) +
                                          " (its load is past its limit: both are expected)");
  }
  // The calendar window: at most its limit from one Berlin midnight to the next, by the
  // nodes' clocks (the world's until a clock is stepped; then its two days together).
  const int64_t midnight = kCalendarMidnightNs - world_.wall_at(0);
  if (has('y')) {
    limiters.push_back({'y', "calendar window", [&, midnight](int64_t a, int64_t b) {
                          int64_t over = 0;
                          if (a < clock_stepped) {
                            over = bounded_over_admission(ops, 'y', kCalendarLimit, {midnight}, a,
                                                          std::min(b, clock_stepped));
                          }
                          if (b > clock_stepped) {
                            over = std::max(over,
                                            bounded_over_admission(ops, 'y', 2 * kCalendarLimit, {},
                                                                   std::max(a, clock_stepped), b));
                          }
                          return over;
                        }});
    // A denial says when the day ends: its retry-after reaches the local midnight (give or
    // take its own span and the millisecond it is rounded to).
    int64_t wrong = 0, denials = 0;
    for (const Op& o : ops) {
      if (o.kind != 'y' || o.res != Res::kDeny || o.value < 0 || o.end >= midnight ||
          o.end >= clock_stepped)
        continue;
      ++denials;
      const int64_t reset = o.start + o.value * kMs;
      wrong += reset < midnight - (o.end - o.start) - kMs || reset > midnight + kMs;
    }
    check(wrong == 0, "calendar window: " + std::to_string(wrong) +
                          " denials gave a retry-after that is not the local midnight");
    // The day starts again at midnight: while healthy around it, someone is admitted within
    // 300 ms after it (two clients ask every 50 ms, the old day having been full).
    for (const auto& [a, b] : healthy) {
      if (a > midnight - kS || b < midnight + kS || clock_stepped < midnight + kS) continue;
      check(denials > 0, "calendar window: the day before midnight was never full");
      bool again = false;
      for (const Op& o : ops)
        again = again || (o.kind == 'y' && o.res == Res::kOk && !o.fail_mode &&
                          o.start >= midnight && o.end <= midnight + 300 * kMs);
      check(again, "calendar window: nobody admitted in the 300 ms after local midnight");
    }
  }
  // Takes that wait: admitted when due (the answer's time plus its wait), never past the
  // bucket, and in arrival order — one decided before another is never due after it.
  if (has('z')) {
    std::vector<Op> due;
    int64_t waited = 0;
    for (const Op& o : ops) {
      if (o.kind != 'z') continue;
      due.push_back(o);
      if (o.res == Res::kOk && !o.fail_mode) {
        due.back().start += o.value;
        due.back().end += o.value;
        waited += o.value > 0;
      }
    }
    limiters.push_back({'z', "token bucket with waiting takes", [&, due](int64_t a, int64_t b) {
                          return bucket_over_admission(due, 'z', kWaitCap, kWaitRate, a, b);
                        }});
    check(waited > 0, "no take ever waited (the load is four times the rate)");
    int64_t out_of_order = 0;
    for (const auto& [a, b] : healthy) {
      std::vector<const Op*> in;
      for (const Op& o : ops) {
        if (o.kind == 'z' && o.res == Res::kOk && !o.fail_mode && o.start >= a &&
            o.end + o.value <= b)
          in.push_back(&o);
      }
      for (const Op* x : in) {
        for (const Op* y : in) {
          // x decided before y asked, yet x due after y surely was.
          out_of_order += x->end < y->start && x->start + x->value > y->end + y->value;
        }
      }
    }
    check(out_of_order == 0,
          "waiting takes admitted out of arrival order " + std::to_string(out_of_order) + " times");
  }
  // The shadow log, read as enforcing (its would-be denials as denials), keeps the sliding
  // log's bounds: it counted exactly as the real one would have.
  std::vector<Op> as_enforced;
  if (has('h')) {
    for (const Op& o : ops) {
      if (o.kind != 'h') continue;
      as_enforced.push_back(o);
      if (o.res == Res::kOk && o.value == 1) as_enforced.back().res = Res::kDeny;
    }
    limiters.push_back({'h', "shadow sliding log (as enforced)", [&](int64_t a, int64_t b) {
                          return over_admission(as_enforced, 'h', kShadowLimit, kWindowNs, a, b);
                        }});
    int64_t denied = 0, would = 0;
    for (const Op& o : ops) {
      denied += o.kind == 'h' && o.res == Res::kDeny;
      would += o.kind == 'h' && o.res == Res::kOk && o.value == 1;
    }
    check(denied == 0, "the shadow policy denied " + std::to_string(denied) + " requests");
    check(would > 0, "the shadow policy never would have denied (the load is twice its limit)");
    check(twin_disagreed_ == 0,
          "the shadow policy's would-be denials differ from its enforcing "
          "twin's denials " +
              std::to_string(twin_disagreed_) + " times");
  }
  // Debts are repaid before anyone is admitted: after a charge left the owing bucket at r < 0
  // tokens (rounded down: it owes more than -r - 1), no take is admitted until -r tokens have
  // dripped in (while healthy: a charge lost with an owner is the replication bound's, as
  // any count).
  if (has('j')) {
    int64_t early = 0, owed = 0;
    for (const auto& [a, b] : healthy) {
      for (const Op& c : ops) {
        if (c.kind != 'J' || c.res != Res::kOk || c.value >= 0 || c.start < a || c.end > b)
          continue;
        ++owed;
        const int64_t repaid = c.start + -c.value * kS / kDebtRate;
        for (const Op& t : ops) {
          early +=
              t.kind == 'j' && t.res == Res::kOk && t.start > c.end && t.end < repaid && t.end <= b;
        }
      }
    }
    check(owed > 0, "the owing bucket was never in debt (one op in four charges 3)");
    check(early == 0, "admitted while a debt was owed: " + std::to_string(early));
  }
  for (Limiter& l : limiters) {
    for (const auto& [a, b] : healthy) l.healthy = std::max(l.healthy, l.over(a, b));
    check(l.healthy == 0,
          std::string(l.name) + " over-admission while healthy: " + std::to_string(l.healthy));
    l.all = l.over(load_start, end);
    for (const Span& s : spans_) {
      if (!s.owner_lost) continue;
      int64_t bound = possible_admissions(ops, l.kind, s.loss_from(), s.loss_to()) + l.loss_extra;
      for (int64_t t : s.more_crashes) {
        bound += possible_admissions(ops, l.kind, t - kLagNs - kSlackNs, t) + l.loss_extra;
      }
      const int64_t back = (s.converged >= 0 ? s.converged : end) + kSettleNs;
      const int64_t over = l.over(s.start - kWindowNs, back);
      check(over <= bound, std::string(l.name) + " over-admission across " + s.label + ": " +
                               std::to_string(over) + " > " + std::to_string(bound) +
                               " (admissions in the last Δ)");
    }
  }

  // A node whose disk refused writes kept serving — every request through it answered, none
  // by a fail mode — while its saves failed (counted), and saved a whole file again once the
  // disk was back (what a crash meanwhile would lose: what it admitted since its last good
  // save, as for any crash between saves; the restart fault loads such a file).
  for (const Span& s : spans_) {
    if (s.disk_node < 0 || s.mended < 0) continue;
    int64_t unanswered = 0;
    for (const Op& o : ops) {
      unanswered += o.node == s.disk_node && o.start >= s.start && o.end <= s.mended &&
                    (o.res == Res::kInfo || o.res == Res::kFail || o.fail_mode);
    }
    check(unanswered == 0, s.label + ": " + std::to_string(unanswered) +
                               " requests through the node went unanswered while its disk was "
                               "broken");
    check(s.saves_failed_after > s.saves_failed_before,
          s.label + ": no save failed while the disk refused writes");
    if (world_.node(s.disk_node).up() && end - s.mended > 4 * kS) {
      const SnapshotStatus st = world_.node(s.disk_node).node->services().snapshots->status();
      check(st.saves_ok > s.saves_ok_after_mend && st.last_ok,
            s.label + ": no good save after the disk came back");
    }
  }

  // Counters: nothing counted that nobody asked for; an async one loses at most what was
  // possibly counted in the last Δ before each fault (a figure when a partition split the
  // copies: both sides counted, the merge keeps the larger), a sync one nothing.
  bool split = false;
  for (const Span& s : spans_) split = split || s.split_copies;
  for (Counter& k : counters) {
    const std::string name = std::string(1, k.kind) + (k.sync ? " (sync)" : " (async)");
    if (k.count < 0) {
      check(false, "counter " + name + " unreadable at the end");
      continue;
    }
    int64_t lower = 0, upper = 0;
    if (k.kind == 'A') {
      // FG.TAKEALL never under-counts: every admission is there. Above them, at most the
      // ones answered an error (refunds that may not have arrived) and the denied ones whose
      // reservation may still hold (its cancel lost: until it expires).
      for (const Op& o : ops) {
        if (o.kind != 'A') continue;
        lower += o.res == Res::kOk && o.end < k.read_start;
        upper += maybe_counted(o) && o.start < k.read_end;
        upper += o.res == Res::kDeny && o.start < k.read_end &&
                 o.end + kTakeAllReserveMs * kMs + kSlackNs >= k.read_start;
      }
    } else if (k.kind == 'v') {
      // Reservations: kept once committed; given back when cancelled (or expired).
      for (const Op& o : ops) {
        const bool yes = o.res == Res::kOk && !o.fail_mode && o.value == 1;
        lower += o.kind == 'k' && yes && o.end < k.read_start;
        upper += o.kind == 'v' && maybe_counted(o) && o.start < k.read_end;
        upper -= o.kind == 'x' && yes && o.end < k.read_start;
      }
    } else {
      std::tie(lower, upper) = counter_bounds(ops, k.kind, k.read_start, k.read_end);
    }
    for (const Span& s : spans_) {
      // (a rolling restart stops each node gracefully, handing its state over, and a broken
      // disk stops nothing: neither may lose anything, async or not)
      if (s.label.rfind("rolling", 0) == 0 || s.disk_node >= 0) continue;
      // (a sync counter is on its replicas before it is answered, but on disk only at the
      // next save: it loses nothing but to a reboot)
      if (k.sync && s.saved_at < 0) continue;
      const int64_t t0 = s.loss_from();
      k.bound += possible_admissions(ops, k.kind, t0, s.loss_to());
      if (k.kind == 'v') k.bound += possible_admissions(ops, 'k', t0, s.loss_to());
      for (int64_t t : s.more_crashes) {
        k.bound += possible_admissions(ops, k.kind, t - kLagNs - kSlackNs, t);
        if (k.kind == 'v') k.bound += possible_admissions(ops, 'k', t - kLagNs - kSlackNs, t);
      }
    }
    k.loss = std::max<int64_t>(0, lower - k.count);
    check(k.count <= upper, "counter " + name + " " + std::to_string(k.count) +
                                " above what was asked, " + std::to_string(upper));
    check(k.loss <= k.bound || (!k.sync && split),
          "counter " + name + " lost " + std::to_string(k.loss) + " > " + std::to_string(k.bound));
  }
  // INCR answers each caller its own count: no two definite answers alike while healthy
  // (a sync key's: ever).
  for (char kind : {'d', 'm', 'R'}) {
    if (!has(kind)) continue;
    std::vector<std::pair<int64_t, int64_t>> where = healthy;
    if (kind == 'm') {
      // (a reboot takes the key back to its last save: the answers since come again; one
      // answered at the very instant of the reboot came from the nodes before it, and
      // belongs to the stretch before)
      where = {{load_start, end}};
      for (const Span& s : spans_) {
        if (s.saved_at < 0) continue;
        where.back().second = s.start;
        where.push_back({s.start + 1, end});
      }
    }
    int64_t twice = 0, first = 0;
    for (const auto& [a, b] : where) {
      std::map<int64_t, int> seen;
      for (const Op& o : ops) {
        if (o.kind == kind && o.res == Res::kOk && o.start >= a && o.end <= b &&
            ++seen[o.value] == 2 && twice++ == 0) {
          first = o.value;
        }
      }
    }
    check(twice == 0, std::string("INCR (") + kind + ") gave " + std::to_string(twice) +
                          " answers given before, the first " + std::to_string(first));
  }

  for (const Span& s : spans_) {
    if (s.isolated < 0 || s.first_dead < 0) continue;
    std::map<char, int64_t> served;  // by kind ('q', a connection closing, is no answer)
    for (const Op& o : ops) {
      served[o.kind] += o.kind != 'q' && o.node == s.isolated && o.start >= s.first_dead &&
                        o.end <= s.end && (o.res == Res::kOk || o.res == Res::kDeny) &&
                        !o.fail_mode;
    }
    std::string kinds;
    int64_t total = 0;
    for (const auto& [k, n] : served) {
      if (n > 0)
        kinds += (kinds.empty() ? " (" : ", ") + std::string(1, k) + ": " + std::to_string(n);
      total += n;
    }
    check(total == 0, "the cut-off node " + world_.node(s.isolated).id + " answered " +
                          std::to_string(total) + " requests after it was declared dead" +
                          (kinds.empty() ? "" : kinds + ")"));
  }
  // Leases: a holder's and a holder-less one expire within their TTL unless released; a
  // BOUND one lives while its connection is open (its node renews it).
  struct Leases {
    char acquire, release;
    int64_t ttl_ns;
    int64_t most = 0;
  };
  std::vector<Leases> leases = {{'a', 'r', kLeaseTtlNs}};
  if (opt_.load != Load::kBasic) {
    leases.push_back({'o', 'p', kLeaseTtlNs});
    leases.push_back({'u', 'q', 0});
  }
  for (Leases& l : leases) {
    l.most = lease_overlap(ops, l.acquire, l.release, healthy, end, l.ttl_ns);
    check(l.most <= kLeaseLimit, std::string("leases (") + l.acquire +
                                     ") live at once while healthy: " + std::to_string(l.most));
  }
  // Every node serves at the end.
  check(world_.formed(), "the cluster formed at the end");
  const PubsubFigures pubsub = check_pubsub(healthy, end);

  int64_t admitted = 0;
  for (const Op& o : ops) admitted += o.kind == 't' && o.res == Res::kOk;
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016" PRIx64, hist_.digest());
  std::ostringstream line;
  line << "seed " << seed_ << (failures_.empty() ? " ok" : " FAIL") << "  nodes " << opt_.nodes
       << "  faults [";
  for (size_t i = 0; i < spans_.size(); ++i) {
    line << (i ? "; " : "") << spans_[i].label << " @" << (spans_[i].start - load_start) / kMs
         << "ms+" << (spans_[i].end - spans_[i].start) / kMs << "ms";
  }
  line << "]  ops " << ops.size() << "  admitted " << admitted << "  over";
  for (const Limiter& l : limiters) line << " " << l.kind << ":" << l.healthy << "/" << l.all;
  line << "  lost";
  for (const Counter& k : counters) {
    line << " " << k.kind << ":" << k.loss << "/"
         << (split && !k.sync ? std::string("-") : std::to_string(k.bound));
  }
  line << "  leases";
  for (const Leases& l : leases) line << " " << l.acquire << ":" << l.most << "/" << kLeaseLimit;
  if (detect_worst_ >= 0) line << "  detect " << detect_worst_ / kMs << "ms";
  if (leave_worst_ >= 0) line << "  leave " << leave_worst_ / kMs << "ms";
  if (opt_.load == Load::kDoors) line << "  pubsub " << pubsub.delivered << "/" << pubsub.expected;
  line << hot_figures_;
  line << "  digest " << digest;
  for (const auto& f : failures_) line << "\n  failed: " << f;
  v.passed = failures_.empty();
  v.line = line.str();
  v.digest = hist_.digest();
  v.simulated_ns = world_.now();
  return v;
}

}  // namespace

Options::Options() {
  for (int i = 0; i <= static_cast<int>(Fault::kRestart); ++i)
    faults.push_back(static_cast<Fault>(i));
  faults.push_back(Fault::kOverlap);
}

std::string fault_names() {
  std::string s;
  for (const char* n : kFaultNames) s += (s.empty() ? "" : ",") + std::string(n);
  return s;
}

bool parse_faults(const std::string& list, std::vector<Fault>& out, std::string& why) {
  out.clear();
  if (list == "none") return true;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    const auto* at = std::find_if(std::begin(kFaultNames), std::end(kFaultNames),
                                  [&](const char* n) { return name == n; });
    if (at == std::end(kFaultNames)) {
      why = "unknown fault '" + name + "' (known: " + fault_names() + ", or none)";
      return false;
    }
    out.push_back(static_cast<Fault>(at - std::begin(kFaultNames)));
  }
  if (out.empty()) {
    why = "--faults is empty (say none for none)";
    return false;
  }
  return true;
}

Verdict run_seed(uint64_t seed, const Options& opt) {
  Run run(seed, opt);
  return run.go();
}

}  // namespace fg::sim
