// The Redis data commands (strings, keys and TTLs): each goes to the request core whole, as
// its words; the shard that owns its key runs it (actors/data_ops.cpp), so arguments are
// checked there, in Redis's order. Only what splitting a command needs is checked here.
#include "errors.hpp"
#include "handlers.hpp"

namespace fg {

bool data_sync(CommandContext& s, std::string_view key);

void data_request(CommandContext& s, Args& a, DataCmd c) {
  if (data_cmd_info(c).pairs_broken(a.size())) {
    return s.local().error(err::wrong_arity(data_cmd_info(c).name));
  }
  Request r;
  r.verb = Verb::kData;
  r.data = c;
  r.resp3 = s.proto() >= 3;
  r.key = data_route_key(c, a);
  r.args = &a;
  r.spec.sync = data_sync(s, r.key);
  if (c == DataCmd::kEval) {  // (its calls are checked against its user's rights)
    const AclUser* u = s.acl().user();
    if (u && !u->unrestricted()) r.user = u;
  }
  s.request(r, ReplyStyle::kData);
}

// A data command's writes wait for a replica (cluster mode) when the node says so
// (data-replication: sync), or when the key's policy does: a per-key override, or the most
// specific key pattern that matches it, whose policy has `replication: sync`.
bool data_sync(CommandContext& s, std::string_view key) {
  if (s.svc().settings.data_sync) return true;
  if (key.empty()) return false;
  const PolicySet& ps = s.policies();
  if (!ps.sync_keys) return false;  // (no glob matching on the request path for nothing)
  Result<const LimitSpec*> p = ps.lookup(key, {});
  return p.ok() && (*p)->sync;
}

void cmd_multi(CommandContext& s, Args&) { s.multi(); }
void cmd_exec(CommandContext& s, Args&) { s.exec(); }
void cmd_discard(CommandContext& s, Args&) { s.discard(); }
void cmd_watch(CommandContext& s, Args& a) { s.watch(a); }
void cmd_unwatch(CommandContext& s, Args&) { s.unwatch(); }

}  // namespace fg
