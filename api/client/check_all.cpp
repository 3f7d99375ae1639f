// All-or-nothing checks over several keys: reserve each on its owner, then commit all or
// cancel what was taken.
#include <optional>

#include "client_impl.hpp"
#include "errors.hpp"

namespace floodgate {

// Reserve every limit (one round, each to its owner); if all allowed, commit every
// reservation; otherwise cancel the ones taken. A caller that dies between the two leaves
// reservations that expire after Options::reservation_ttl and give back what they took.
void Client::check_all(std::vector<Check> checks, Callback<MultiDecision> cb) {
  if (checks.empty()) {
    MultiDecision m;
    m.allowed = true;
    return cb(Result<MultiDecision>(std::move(m)));
  }
  struct State {
    std::vector<Check> checks;
    std::vector<Result<Decision>> results;
    std::vector<uint64_t> tickets;
    size_t left = 0;
    Callback<MultiDecision> cb;
  };
  auto st = std::make_shared<State>();
  st->checks = std::move(checks);
  st->results.resize(st->checks.size());
  st->tickets.assign(st->checks.size(), 0);
  st->left = st->checks.size();
  st->cb = std::move(cb);
  Impl& impl = *impl_;
  const int64_t ttl = std::max<int64_t>(1, impl.options().reservation_ttl.count());
  auto second_phase = [&impl, st] {
    MultiDecision m;
    m.allowed = true;
    std::optional<Result<Decision>> error;
    for (const auto& r : st->results) {
      if (!r.ok()) {
        if (!error) error = r;
        m.allowed = false;
        continue;
      }
      m.decisions.push_back(r.value());
      if (!r->allowed) {
        m.allowed = false;
        m.retry_after_ms = std::max(m.retry_after_ms, r->retry_after_ms);
      }
    }
    auto answer = [st, m, error] {
      // A check that could not be made at all is an error, not a denial.
      if (error) return st->cb(Result<MultiDecision>(error->status(), error->error()));
      st->cb(Result<MultiDecision>(m));
    };
    auto pending = std::make_shared<size_t>(0);
    for (uint64_t t : st->tickets) *pending += t != 0;
    const bool commit = m.allowed;
    // Cancels need no wait: if one is lost, its reservation expires all the same.
    if (!commit || *pending == 0) answer();
    // Commits: admitted only once every one is acknowledged. One that fails (its owner died
    // and no replica kept the reservation, or it expired) makes the call an error, and the
    // commits that succeeded are refunded: an admission is never missing from a limit.
    auto committed = std::make_shared<std::vector<size_t>>();
    auto failure = std::make_shared<std::optional<std::pair<Status, std::string>>>();
    for (size_t i = 0; i < st->checks.size(); ++i) {
      if (st->tickets[i] == 0) continue;
      Req r = keyed_req(commit ? pb::COMMIT : pb::CANCEL, st->checks[i].key);
      r.lease = st->tickets[i];
      impl.submit(
          impl.make(r, [&impl, st, i, pending, commit, answer, committed, failure](
                           Status s, const std::string& e, const fg::wire::ResultView* res) {
            if (!commit) return;
            if (s == Status::kOk && res && res->value == 1) {
              committed->push_back(i);
            } else if (!*failure) {
              *failure = s == Status::kOk ? std::make_pair(Status::kUnavailable,
                                                           std::string(fg::err::kTakeAllExpired))
                                          : std::make_pair(s, e);
            }
            if (--*pending != 0) return;
            if (!*failure) return answer();
            for (size_t k : *committed) {
              Req back = keyed_req(pb::ADJUST, st->checks[k].key, &st->checks[k].limit);
              back.has_cost = true;
              back.cost = -st->checks[k].cost;
              impl.submit(
                  impl.make(back, [](Status, const std::string&, const fg::wire::ResultView*) {}));
            }
            st->cb(Result<MultiDecision>((*failure)->first, (*failure)->second));
          }));
    }
  };
  for (size_t i = 0; i < st->checks.size(); ++i) {
    const Check& ch = st->checks[i];
    Req r = keyed_req(pb::RESERVE, ch.key, &ch.limit);
    r.has_cost = true;
    r.cost = ch.cost;
    r.ttl_ms = ttl;
    impl.submit(impl.make(
        r, [st, i, second_phase](Status s, const std::string& e, const fg::wire::ResultView* res) {
          if (s == Status::kOk && res) {
            st->results[i] = Result<Decision>(decision_of(*res));
            st->tickets[i] = res->lease;
          } else {
            st->results[i] = Result<Decision>(s, e);
          }
          if (--st->left == 0) second_phase();
        }));
  }
}

}  // namespace floodgate
