// What the simulated clients saw, and the checks of DESIGN.md's stated bounds over it: the
// same rules as chaos/chaoslib/checks.py, on virtual time. An admission counts toward a
// window only when both its start and its end fall inside it; an operation whose outcome
// is unknown counts only toward upper bounds.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fg::sim {

enum class Res : uint8_t { kOk, kDeny, kFail, kInfo };  // kFail: did not happen

struct Op {
  // The load's kinds (scenario.cpp, setup_clients): t the hot sliding log; c / s async /
  // sync counter; a / r a holder's lease, its release; b token bucket; g GCRA; w sliding
  // window; v / k / x a reservation, its commit, its cancel; d INCR (EXPIRE on the first);
  // m MULTI INCR EXPIRE EXEC, sync; o / p a lease without a holder, its release; u / q a
  // BOUND lease, its connection's close; h the shadow sliding log (value 1: it would have
  // denied); j a take from the owing bucket, J a charge afterwards (value: remaining after);
  // y the calendar window (value: a denial's retry-after in ms, -1 from a fail mode); z a take
  // that waits up to 300 ms (value: its wait in ns when admitted); A an FG.TAKEALL over a
  // counter and a bucket (an error: unknown); G a call through the gateway door's
  // translation (a status: unknown).
  char kind = 't';
  int client = 0;
  int node = 0;
  int64_t start = 0, end = 0;  // virtual ns
  Res res = Res::kInfo;
  bool fail_mode = false;  // answered by the policy's fail mode (a forward timed out, ...)
  int64_t value = 0;       // a lease's id; INCR's reply; a commit's or cancel's 1 or 0
  bool done = false;
};

class History {
 public:
  size_t open(char kind, int client, int node, int64_t start);
  // The first outcome counts; later ones (a reply after the client gave up) are ignored.
  bool close(size_t i, int64_t end, Res res, bool fail_mode = false, int64_t value = 0);
  void note(const std::string& line);  // a fault, a read: part of the digest
  const std::vector<Op>& ops() const { return ops_; }
  uint64_t digest() const { return digest_; }
  // Still open at the end of the run: unknown outcomes.
  void close_all(int64_t end);

 private:
  void fold(const void* p, size_t n);
  std::vector<Op> ops_;
  uint64_t digest_ = 0xcbf29ce484222325ULL;  // FNV-1a
};

bool maybe_counted(const Op& o);
// Most definite admissions of kind `kind` in any window of `window_ns` inside [from, to],
// minus `limit` (0 when the limit held).
int64_t over_admission(const std::vector<Op>& ops, char kind, int64_t limit, int64_t window_ns,
                       int64_t from, int64_t to);
// Token bucket (and GCRA): most definite admissions of `kind` in any interval of length tau
// beyond burst + rate * tau, over intervals up to `horizon_ns` inside [from, to].
// `extra(t)`, when given, is allowed beyond that in an interval starting at t (quota slices
// outstanding then: api/COMMANDS.md, Quota slices).
using Allowance = std::function<int64_t(int64_t)>;
int64_t bucket_over_admission(const std::vector<Op>& ops, char kind, int64_t burst,
                              double rate_per_s, int64_t from, int64_t to,
                              int64_t horizon_ns = 10'000'000'000, const Allowance& extra = {});
// Most definite admissions of `kind` inside one window [k * window_ns, (k + 1) * window_ns)
// of the nodes' clock (the world's time while no clock was stepped) inside [from, to],
// minus `limit`: a sliding window counter never counts more than its limit in its current
// window.
int64_t aligned_over_admission(const std::vector<Op>& ops, char kind, int64_t limit,
                               int64_t window_ns, int64_t from, int64_t to,
                               const Allowance& extra = {});
// The same for windows that end at the instants `ends` (sorted; the last window open-ended):
// a calendar window, from one local midnight to the next.
int64_t bounded_over_admission(const std::vector<Op>& ops, char kind, int64_t limit,
                               const std::vector<int64_t>& ends, int64_t from, int64_t to);
// Ops of `kind` that may have been counted and whose interval meets [from, to].
int64_t possible_admissions(const std::vector<Op>& ops, char kind, int64_t from, int64_t to);
// What a counter read over [read_start, read_end] must lie between.
std::pair<int64_t, int64_t> counter_bounds(const std::vector<Op>& ops, char kind,
                                           int64_t read_start, int64_t read_end);
// Most leases of one key definitely held at once at an instant inside one of `spans`: a
// lease granted by an `acquire` op is live from its end to the start of the client's next
// `release` op (or the end of the run), and, when `ttl_ns` > 0 (nobody renews it), no
// longer than its TTL from the acquire's start.
int64_t lease_overlap(const std::vector<Op>& ops, char acquire, char release,
                      const std::vector<std::pair<int64_t, int64_t>>& spans, int64_t run_end,
                      int64_t ttl_ns = 0);

}  // namespace fg::sim
