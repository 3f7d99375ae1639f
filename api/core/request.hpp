// The protocol-neutral request and its outcome: what every door (RESP, native, a request
// forwarded by another node, the node's own lease renewals) decodes into and encodes from.
// Nothing here knows a wire format.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data_cmd.hpp"
#include "data_reply.hpp"
#include "decision.hpp"
#include "lease_set.hpp"
#include "limit_spec.hpp"

namespace fg {

enum class Verb : uint8_t {
  kTake,        // consume from the key's limiter
  kPeek,        // evaluate, consume nothing, create no key
  kReserve,     // take, given back after ttl_ms unless committed (outcome.ticket)
  kReset,       // forget the key (value 1 if it existed)
  kAcquire,     // a concurrency lease
  kRenew,       // extend one lease (value 1 renewed, 0 unknown or expired)
  kRelease,     // give one lease back (value 1, or 0 unknown)
  kCount,       // live leases of the key
  kHeartbeat,   // renew every lease of a holder, on every node (value: how many)
  kReleaseAll,  // release every lease of a holder, on every node (value: how many)
  kCommit,      // keep what a reservation took (value 1, 0 if the ticket is gone)
  kCancel,      // give back what a reservation took (value 1, 0 if the ticket is gone)
  kData,        // a Redis data command (`data`, `args`); the outcome's `reply` answers it
  // A cost known only afterwards (FG.ADJUST): `cost` charged (> 0, into debt if need be) or
  // refunded (< 0); the outcome is the limiter's state after it, as a peek of cost 1.
  kAdjust,
};

inline bool keyed(Verb v) { return v != Verb::kHeartbeat && v != Verb::kReleaseAll; }
// The command a limiter verb answers to in ACL rules: a user's rights on FG.TAKE are its
// rights on every take (and on reserve, commit and cancel, which take in two steps), from
// either door; a forward that does not say which command it came as is checked as this.
inline const char* acl_command_of(Verb v) {
  switch (v) {
    case Verb::kAdjust:
      return "fg.adjust";
    case Verb::kPeek:
      return "fg.peek";
    case Verb::kReset:
      return "fg.reset";
    case Verb::kAcquire:
      return "fg.acquire";
    case Verb::kRenew:
      return "fg.renew";
    case Verb::kRelease:
      return "fg.release";
    case Verb::kCount:
      return "fg.count";
    case Verb::kHeartbeat:
      return "fg.heartbeat";
    case Verb::kReleaseAll:
      return "fg.releaseall";
    default:
      return "fg.take";  // (take, reserve, commit, cancel)
  }
}
inline bool rate_verb(Verb v) {
  return v == Verb::kTake || v == Verb::kPeek || v == Verb::kReserve;
}
// Whether the verb's outcome is a rate limit's five fields (a decision).
inline bool answers_decision(Verb v) { return rate_verb(v) || v == Verb::kAdjust; }
// Whether the verb's outcome is an admission decision (counted as allowed / denied).
inline bool decides(Verb v) {
  return v == Verb::kTake || v == Verb::kReserve || v == Verb::kAcquire;
}

class AclUser;

struct Request {
  Verb verb = Verb::kTake;
  uint16_t metric = 0;            // the command it came as, for metrics (see command_id)
  std::string_view key;           // keyed verbs; at most kMaxKeyLen bytes
  LimitSpec spec;                 // take, peek, reserve, acquire: the limit in force, resolved
  int64_t cost = 1;               // take, peek, reserve: 0..kMaxCount (0 evaluates only)
  int64_t ttl_ms = 0;             // renew, heartbeat: the new TTL; reserve: how long it holds
  int64_t wait_ms = 0;            // take: WAIT, how long the caller will wait (0..kMaxWaitMs)
  uint64_t lease = 0;             // renew, release: the lease; commit, cancel: the ticket
  std::string_view holder;        // acquire, heartbeat, release-all
  bool bound = false;             // acquire: the lease belongs to the requesting connection
  bool here_only = false;         // heartbeat, release-all: this node's leases, not every node's
  DataCmd data = DataCmd::kNone;  // data: which command
  bool resp3 = false;   // data: the client speaks RESP3 (some replies' shape depends on it)
  bool waited = false;  // data: a blocked command's later attempt (it has waited)
  const std::vector<std::string_view>* args = nullptr;  // data: its words, name first; the
                                                        // core copies the list, not the bytes
  uint32_t txn = 0;  // data: the transaction it belongs to (Flight::open_txn), 0 none
  // data, scripts: the ACL user whose rights its calls run with; heartbeat and release of a
  // holder: the user whose keys' leases they may touch. Null when unrestricted.
  // Kept alive by the door until the outcome is back.
  const AclUser* user = nullptr;
  // Who asks: the client's ACL user, named in a forward so the key's owner checks its
  // rights again (forwarding.cpp). Null only for the node's own upkeep (lease renewals for
  // its connections, give-backs). Needed until submit() returns.
  const AclUser* asker = nullptr;
  // The command it came as, as ACL rules name it ("cl.throttle"), for that check; static
  // text. (A data command's words name it.)
  std::string_view command;
};

// What happened to a request. The doors encode it; none decides anything from it.
enum class Code : uint8_t {
  kOk,
  kError,          // bad request: `error` says why
  kWrongType,      // the key holds another kind of limiter
  kMoved,          // another node owns the key's slot (`slot`, `node`)
  kTryAgain,       // the slot is moving, its owner is down or silent
  kClusterDown,    // no quorum, or no owner for the slot
  kNotReplicated,  // done here, no replica acknowledged in time
  kKeyLimit,       // the node holds max-keys keys
};

// Texts are views (into errors.hpp's constants, the door's texts — Door::texts — or the
// flight's forwarded answers), valid until the door has encoded the outcome.
struct Outcome {
  Code code = Code::kOk;
  std::string_view error;  // the reply text (code != kOk), in Redis's words
  // kOpen / kClosed: no copy of the key's state could be reached and the policy's
  // on_unavailable chose this answer (a decision, or an acquire without a lease).
  FailMode unavailable = FailMode::kError;
  Decision decision;      // take, peek, reserve
  AcquireResult acquire;  // acquire
  int64_t limit = 0;      // acquire: the key's limit
  uint64_t ticket = 0;    // reserve: the reservation (0 when nothing was taken)
  int64_t value = 0;      // reset, renew, release, count, heartbeat, release-all, commit, cancel
  uint32_t slot = 0;      // moved
  std::string_view node;  // moved: the owner's id
  const DataReply* reply = nullptr;  // data: the answer (errors are in `code` and `error`)
  bool shadow_denied = false;        // a shadow policy denied it, and it was allowed (finish)

  bool ok() const { return code == Code::kOk; }
  bool allowed() const {
    return unavailable == FailMode::kOpen || decision.allowed || acquire.granted;
  }
};

}  // namespace fg
