// Running one Redis data command on a shard directly, as the request core would send it.
#pragma once
#include <string_view>
#include <vector>

#include "data_cmd.hpp"
#include "data_reply.hpp"
#include "shard.hpp"

namespace fg {

// Runs `words` (name first, key second) as `cmd` on `s` at `now_ns`; returns the reply's
// first item, and the op's status in `*status` if asked.
inline ReplyItem data(Shard& s, DataCmd cmd, std::vector<std::string_view> words, DataReply& r,
                      OpStatus* status = nullptr, int64_t now_ns = 1'700'000'000'000'000'000) {
  ShardOp o;
  o.code = OpCode::kData;
  o.data = cmd;
  o.key = key_after_subcommand(cmd) ? words[2] : words[1];
  o.hash = KeyTable::hash(o.key);
  o.args = &words;
  o.reply = &r;
  s.execute(o, now_ns);
  if (status) *status = o.status;
  return r.items.empty() ? ReplyItem{} : r.items[0];
}

}  // namespace fg
