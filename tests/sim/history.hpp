// What the simulated clients saw, and the checks of DESIGN.md's stated bounds over it: the
// same rules as chaos/chaoslib/checks.py, on virtual time. An admission counts toward a
// window only when both its start and its end fall inside it; an operation whose outcome
// is unknown counts only toward upper bounds.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fg::sim {

enum class Res : uint8_t { kOk, kDeny, kFail, kInfo };  // kFail: did not happen

struct Op {
  char kind = 't';  // t: the hot sliding log, c / s: async / sync counter, a / r: lease
  int client = 0;
  int node = 0;
  int64_t start = 0, end = 0;  // virtual ns
  Res res = Res::kInfo;
  bool fail_mode = false;  // answered by the policy's fail mode (a forward timed out, ...)
  int64_t value = 0;       // a lease's id; a counter read's count
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
// Ops of `kind` that may have been counted and whose interval meets [from, to].
int64_t possible_admissions(const std::vector<Op>& ops, char kind, int64_t from, int64_t to);
// What a counter read over [read_start, read_end] must lie between.
std::pair<int64_t, int64_t> counter_bounds(const std::vector<Op>& ops, char kind,
                                           int64_t read_start, int64_t read_end);
// Most leases definitely held at once at an instant inside one of `spans`: a granted lease
// is live from the end of its acquire to the start of its release (or the end of the run).
int64_t lease_overlap(const std::vector<Op>& ops,
                      const std::vector<std::pair<int64_t, int64_t>>& spans, int64_t run_end);

}  // namespace fg::sim
