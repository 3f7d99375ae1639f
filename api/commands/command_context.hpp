// What a command handler sees of the RESP connection that runs it: a writer for an
// immediate reply, the request core for keyed work (request()), and the connection's state.
// The RESP session (api/server/resp_session.hpp) is the one implementation; it owns the
// reply order and the flight.
#pragma once
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "client_registry.hpp"
#include "command_table.hpp"
#include "errors.hpp"
#include "request.hpp"
#include "resp_writer.hpp"
#include "services.hpp"
#include "take_all.hpp"

namespace fg {

// How an outcome becomes a RESP reply.
enum class ReplyStyle : uint8_t {
  kThrottle,  // CL.THROTTLE: [limited, limit, remaining, retry_after_s, reset_after_s]
  kGcra,      // GCRA: CL.THROTTLE's, its seconds rounded up (Redis's gcra.c)
  kDecision,  // FG.TAKE / FG.PEEK: [allowed, limit, remaining, retry_after_ms, reset_after_ms]
  kAcquire,   // FG.ACQUIRE: [granted, lease, held, limit, retry_after_ms]
  kInteger,   // the outcome's value
  kData,      // a data command's reply (outcome.reply)
};

class CommandContext {
 public:
  CommandContext(Services& svc, std::shared_ptr<ClientInfo> client)
      : svc_(svc), client_(std::move(client)), subs_(svc.pubsub) {
    acl_.start(svc.acl);
  }
  virtual ~CommandContext() = default;

  // Hands a decoded request to the request core; its reply takes this command's place.
  virtual void request(Request& r, ReplyStyle style) = 0;
  // A blocking command's pop (BLPOP and its kin): if it finds nothing, the client waits —
  // up to `timeout_ms` (0: for good) — and it is tried again when a key gets elements.
  // Inside a transaction it is tried once, as Redis does.
  virtual void block(Request& r, int64_t timeout_ms) = 0;
  // Whether a take may hold its reply until its admission is due (FG.TAKE ... WAIT): not in
  // a transaction nor a script, which run at once as a blocking command does there.
  virtual bool can_wait() const { return false; }
  // FG.TAKEALL: every limit reserved, then all committed or all cancelled (take_all.hpp);
  // its reply takes this command's place when the rounds are done. Not in a transaction nor
  // a script (which cannot wait for the rounds).
  virtual void take_all(std::vector<TakeAllItem> items, int64_t cost) {
    (void)items;
    (void)cost;
    local().error(err::kTakeAllHere);
  }
  // Transactions (MULTI ... EXEC): the session queues what comes between.
  virtual void multi() = 0;
  virtual void exec() = 0;
  virtual void discard() = 0;
  virtual void watch(std::vector<std::string_view>& keys) = 0;  // WATCH key [key ...]
  virtual void unwatch() = 0;
  // RESET: the connection as a new one finds it (Redis's clearClientConnectionState): no
  // transaction, watches or subscriptions, RESP2, the default user, no name, replies on.
  virtual void reset() = 0;

  RespWriter local() { return RespWriter(local_, proto_); }  // an immediate reply
  Services& svc() { return svc_; }
  ClientInfo& client() { return *client_; }
  // The policies in force: fetched again when they changed, checked once per read.
  const PolicySet& policies() {
    if (!policies_checked_) {
      svc_.policies->refresh(policies_, policies_version_);
      policies_checked_ = true;
    }
    return *policies_;
  }
  // Keeps `s` alive until this read's replies are written; returns a view of it.
  std::string_view keep(std::string s) { return arena_.emplace_back(std::move(s)); }
  int proto() const { return proto_; }
  void set_proto(int p) {
    proto_ = p;
    client_->proto = p;
    subs_.set_proto(p);
  }
  // Pub/sub: the channels and patterns this connection hears.
  Subscriptions& subscriptions() { return subs_; }
  // A RESP2 connection with subscriptions: only kSubscribeMode commands run (Redis's rule).
  bool in_subscribe_mode() const { return proto_ == 2 && subs_.active(); }
  // Whether a key (or shard channel) another node owns is answered -MOVED (a cluster-aware
  // client, or redirect always) rather than forwarded.
  bool redirects() const;
  bool authenticated() const { return acl_.authenticated(); }
  // Who this connection is (AUTH, HELLO AUTH) and what it may run.
  AclSession& acl() { return acl_; }
  // Whether the connection's user may run `a` (command `spec`); when not, writes the
  // -NOPERM reply and counts the refusal. Commands allowed before AUTH are never refused.
  // `context`: "toplevel", or "multi" inside a transaction (ACL LOG's words).
  bool acl_refuses(const CommandSpec& spec, const std::vector<std::string_view>& a,
                   const char* context);
  void request_close() { close_ = true; }
  // CLIENT REPLY ON | OFF | SKIP: whether replies are sent (SKIP: not the next command's).
  enum class ReplyMode : uint8_t { kOn, kOff, kSkipNext };
  // (ON, and RESET, are answered even when replies were off: Redis clears its flags first)
  void set_reply_mode(ReplyMode m) {
    reply_mode_ = m;
    replies_turned_on_ = m == ReplyMode::kOn;
  }
  ReplyMode reply_mode() const { return reply_mode_; }
  // The client asked for the cluster's topology: from now on it is told -MOVED.
  void set_cluster_aware() { cluster_aware_ = true; }
  // The routing snapshot in force (cluster mode only), refreshed once per read.
  const Routing* routing() const { return routing_.get(); }

 protected:
  Services& svc_;
  std::shared_ptr<ClientInfo> client_;
  std::string local_;  // immediate replies of this read, back to back
  std::deque<std::string> arena_;
  std::shared_ptr<const PolicySet> policies_;
  uint64_t policies_version_ = 0;
  bool policies_checked_ = false;  // this read
  std::shared_ptr<const Routing> routing_;
  int proto_ = 2;
  AclSession acl_;
  bool close_ = false;
  bool cluster_aware_ = false;
  ReplyMode reply_mode_ = ReplyMode::kOn;
  bool replies_turned_on_ = false;  // by the command running now
  Subscriptions subs_;
};

}  // namespace fg
