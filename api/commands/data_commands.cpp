// The Redis data commands (strings, keys and TTLs): each goes to the request core whole, as
// its words; the shard that owns its key runs it (actors/data_ops.cpp), so arguments are
// checked there, in Redis's order. Only what splitting a command needs is checked here.
#include "errors.hpp"
#include "handlers.hpp"

namespace fg {

void data_request(CommandContext& s, Args& a, DataCmd c) {
  if (data_cmd_info(c).step == 2 && a.size() % 2 == 0) {
    return s.local().error(err::wrong_arity(data_cmd_info(c).name));
  }
  Request r;
  r.verb = Verb::kData;
  r.data = c;
  r.resp3 = s.proto() >= 3;
  r.key = data_route_key(c, a);
  r.args = &a;
  s.request(r, ReplyStyle::kData);
}

void cmd_multi(CommandContext& s, Args&) { s.multi(); }
void cmd_exec(CommandContext& s, Args&) { s.exec(); }
void cmd_discard(CommandContext& s, Args&) { s.discard(); }
void cmd_watch(CommandContext& s, Args& a) { s.watch(a); }
void cmd_unwatch(CommandContext& s, Args&) { s.unwatch(); }

}  // namespace fg
