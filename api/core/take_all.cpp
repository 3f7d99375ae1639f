// FG.TAKEALL's two rounds through the request core (take_all.hpp).
#include "take_all.hpp"

#include "errors.hpp"
#include "lease_upkeep.hpp"
#include "request_job.hpp"

namespace fg {

namespace {

struct TakeAll {
  Services& svc;
  Lane& lane;
  std::vector<TakeAllItem> items;
  int64_t cost = 1;
  const AclUser* asker = nullptr;
  Door door;
  std::function<void(TakeAllResult)> done;
  std::vector<uint64_t> tickets;
  TakeAllResult result;
};

Request item_request(const TakeAll& t, size_t i, Verb verb) {
  Request r;
  r.verb = verb;
  r.key = t.items[i].key;
  r.spec = t.items[i].spec;
  r.cost = t.cost;
  r.asker = t.asker;
  r.command = "fg.takeall";
  return r;
}

// Gives back the reservations taken (a lost cancel: the reservation expires all the same).
void cancel(const std::shared_ptr<TakeAll>& t) {
  std::vector<Request> cancels;
  for (size_t i = 0; i < t->items.size(); ++i) {
    if (t->tickets[i] == 0) continue;
    Request r = item_request(*t, i, Verb::kCancel);
    r.lease = t->tickets[i];
    cancels.push_back(r);
  }
  if (cancels.empty()) return;
  Door d = t->door;
  d.count = false;
  RequestJob::start(t->svc, t->lane, std::move(cancels), d, t, [](std::vector<Outcome>&) {});
}

void commit(const std::shared_ptr<TakeAll>& t) {
  std::vector<Request> commits;
  std::vector<size_t> which;
  for (size_t i = 0; i < t->items.size(); ++i) {
    if (t->tickets[i] == 0) continue;  // (a fail_open or shadow answer: nothing taken)
    Request r = item_request(*t, i, Verb::kCommit);
    r.lease = t->tickets[i];
    commits.push_back(r);
    which.push_back(i);
  }
  if (commits.empty()) {
    t->result.allowed = true;
    return t->done(std::move(t->result));
  }
  Door d = t->door;
  d.count = false;
  RequestJob::start(
      t->svc, t->lane, std::move(commits), d, t, [t, which](std::vector<Outcome>& out) {
        std::vector<Waiter> refunds;
        std::string why;
        for (size_t k = 0; k < out.size(); ++k) {
          const size_t i = which[k];
          if (out[k].ok() && out[k].value == 1) {
            refunds.push_back(Waiter{t->items[i].key, t->items[i].spec, t->cost});
          } else if (why.empty()) {
            why = out[k].ok() ? std::string(err::kTakeAllExpired) : std::string(out[k].error);
          }
        }
        if (why.empty()) {
          t->result.allowed = true;
          return t->done(std::move(t->result));
        }
        // (told it failed: what was kept is given back)
        give_back_waits(t->svc, std::move(refunds));
        TakeAllResult r;
        r.error = why;
        t->done(std::move(r));
      });
}

}  // namespace

void take_all(Services& svc, Lane& lane, std::vector<TakeAllItem> items, int64_t cost,
              const AclUser* asker, Door door, std::function<void(TakeAllResult)> done) {
  auto t = std::make_shared<TakeAll>(
      TakeAll{svc, lane, std::move(items), cost, asker, door, std::move(done), {}, {}});
  t->tickets.assign(t->items.size(), 0);
  std::vector<Request> reserves;
  for (size_t i = 0; i < t->items.size(); ++i) {
    Request r = item_request(*t, i, Verb::kReserve);
    r.ttl_ms = kTakeAllReserveMs;
    reserves.push_back(r);
  }
  RequestJob::start(svc, lane, std::move(reserves), door, t, [t](std::vector<Outcome>& out) {
    TakeAllResult& res = t->result;
    res.allowed = true;
    for (size_t i = 0; i < out.size(); ++i) {
      const Outcome& o = out[i];
      if (!o.ok()) {
        if (res.error.empty()) res.error = std::string(o.error);
        continue;
      }
      t->tickets[i] = o.ticket;
      res.decisions.push_back(o.decision);
      res.unavailable.push_back(o.unavailable);
      res.allowed = res.allowed && o.decision.allowed;
    }
    if (!res.error.empty() || !res.allowed) {
      cancel(t);
      TakeAllResult r = std::move(res);
      if (!r.error.empty()) {
        r.decisions.clear();
        r.unavailable.clear();
      }
      r.allowed = false;
      return t->done(std::move(r));
    }
    commit(t);
  });
}

}  // namespace fg
