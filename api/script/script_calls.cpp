// What a script's redis.call runs: a data command on the shards the script holds, under
// its user's rights, its keys' slot and its undo log.
#include <string>

#include "errors.hpp"
#include "key_slot.hpp"
#include "key_table.hpp"
#include "script_run.hpp"
#include "words.hpp"

namespace fg {
namespace script {

void status_error(OpStatus st, DataReply& out) {
  out.clear();
  out.error(st == OpStatus::kWrongType    ? err::kWrongType
            : st == OpStatus::kNoMemory   ? err::kOomMaxmemory
            : st == OpStatus::kUserKeys   ? err::kOomUserKeys
            : st == OpStatus::kUserMemory ? err::kOomUserMemory
                                          : err::kKeyLimit);
}

// Runs one data op on `shard` for the script.
void run_part(Run& r, Shard& shard, DataCmd c, std::string_view key, uint32_t slot,
              const std::vector<std::string_view>& words, DataReply& reply, bool every_slot,
              const Step* step = nullptr) {
  ShardOp o;
  o.code = OpCode::kData;
  o.data = c;
  o.key = key;
  o.hash = KeyTable::hash(key);
  o.account = r.account;
  o.slot = static_cast<uint16_t>(slot);
  o.args = &words;
  o.reply = &reply;
  o.every_slot = every_slot;
  shard.script_call(o, r.now_ns, step);
  if (o.status != OpStatus::kOk) status_error(o.status, reply);
}

// What redis.call runs: r.words in, r.reply out. Only C++ here, no Lua.
void call_command(Run& r) {
  DataReply& out = r.reply;
  out.clear();
  const std::string name = to_lower(r.words[0]);
  const auto argc = static_cast<int>(r.words.size());
  if (name == "time" || name == "ping") {  // what limiter scripts ask of the server
    const int ar = name == "time" ? 1 : -1;
    if ((ar > 0 && argc != ar) || argc > 2) {
      return out.error(err::kScriptArity);
    }
    if (name == "ping") return argc == 2 ? out.bulk(r.words[1]) : out.status("PONG");
    out.array(2);
    out.bulk(std::to_string(r.now_ns / 1'000'000'000));
    out.bulk(std::to_string(r.now_ns % 1'000'000'000 / 1000));
    return;
  }
  const ScriptCallable callable = r.callable ? r.callable(name) : ScriptCallable{};
  const int ar = callable.arity;
  if (ar == 0) return out.error(err::kScriptUnknownCommand);
  if ((ar > 0 && argc != ar) || argc < -ar) {
    return out.error(err::kScriptArity);
  }
  if (r.caller) {
    if (const char* why = r.caller->refuse(r.words)) return out.error(std::string("ERR ") + why);
  }
  if (callable.data == DataCmd::kXRead || callable.data == DataCmd::kXReadGroup) {
    // (a script cannot wait: Redis refuses BLOCK there)
    for (size_t i = 1; i + 1 < r.words.size() && !iequals(r.words[i], "streams"); ++i) {
      if (iequals(r.words[i], "group")) {
        i += 2;  // (its group and consumer, whatever they are named)
        continue;
      }
      if (iequals(r.words[i], "block")) return out.error(err::block_in_script(r.words[0]));
    }
  }
  if ((name == "publish" || name == "spublish") && r.publish) {  // (a message, not data)
    const int64_t n = (*r.publish)(name == "spublish", r.words[1], r.words[2]);
    return n < 0 ? out.error(err::kBusFull) : out.integer(n);
  }
  if (callable.data == DataCmd::kNone) return out.error(err::kScriptNotAllowed);
  const DataCmd c = callable.data;
  const DataCmdInfo& info = data_cmd_info(c);
  if (r.read_only && info.writes) {
    return out.error(err::kScriptReadOnly);
  }
  const Step& step = *r.step;
  if (info.merge == Merge::kPick) {  // RANDOMKEY: one of the keys the script's shards serve
    std::vector<DataReply> parts;
    std::vector<const DataReply*> picks;
    parts.reserve(64);
    for (uint64_t m = step.mask; m; m &= m - 1) {
      DataReply& part = parts.emplace_back();
      run_part(r, *step.shards[__builtin_ctzll(m)], c, {}, 0, r.words, part, true);
      picks.push_back(&part);
    }
    const ReplyItem* key = picks.empty() ? nullptr : pick_part(picks);
    return key ? out.bulk(key->s) : out.null();
  }
  if (info.every_shard) {  // KEYS: every shard the script holds
    size_t found = 0;
    std::vector<ReplyItem> keys;
    for (uint64_t m = step.mask; m; m &= m - 1) {
      r.part_reply.clear();
      run_part(r, *step.shards[__builtin_ctzll(m)], c, {}, 0, r.words, r.part_reply, true);
      if (r.part_reply.is_error()) {
        out = r.part_reply;
        return;
      }
      for (size_t i = 1; i < r.part_reply.items.size(); ++i) {
        keys.push_back(std::move(r.part_reply.items[i]));
        ++found;
      }
    }
    out.array(static_cast<int64_t>(found));
    for (auto& k : keys) out.items.push_back(std::move(k));
    return;
  }
  if (info.pairs_broken(r.words.size())) {
    return out.error(err::wrong_arity(info.name));
  }
  // Its keys: where they are, whether the script may touch them, what to undo.
  const bool together = info.merge == Merge::kTogether;
  std::vector<size_t> at;  // the words that are keys
  if (together) {
    together_keys(c, r.words).each([&](size_t j) { at.push_back(j); });
  } else if (key_after_subcommand(c)) {  // (OBJECT ENCODING key, XINFO STREAM key)
    if (r.words.size() < 3) return out.error(err::kScriptArity);
    at.push_back(2);
  } else {
    const size_t last = info.merge == Merge::kNone ? 2 : r.words.size();
    for (size_t j = 1; j < last; j += info.step) at.push_back(j);
  }
  r.slots.assign(r.words.size(), 0);
  for (size_t j : at) {
    const std::string_view key = r.words[j];
    if (key.size() > kMaxKeyLen) return out.error(err::kKeyTooLong);
    const uint32_t slot = key_slot(key);
    r.slots[j] = slot;
    const size_t shard = r.shards == 1 ? 0 : slot % r.shards;
    if (!(step.mask >> shard & 1) || !step.shards[shard]->owns(slot)) {
      return out.error(err::kScriptNonLocalKey);
    }
    if (r.cluster) {
      if (r.slot < 0) {
        r.slot = static_cast<int>(slot);
      } else if (static_cast<uint32_t>(r.slot) != slot && !r.allow_cross_slot) {
        return out.error(err::kScriptCrossSlot);
      }
    }
  }
  for (size_t j : at) {
    if (!info.writes) break;
    const std::string_view key = r.words[j];
    if (std::any_of(r.saved.begin(), r.saved.end(),
                    [&](const Run::Saved& sv) { return sv.key == key; }))
      continue;
    Shard* s = step.shards[r.shards == 1 ? 0 : r.slots[j] % r.shards];
    Run::Saved& saved = r.saved.emplace_back();
    saved.shard = s;
    saved.key.assign(key);
    saved.had = s->save_key(key, r.now_ns, saved.before);
  }
  auto shard_of = [&](size_t j) -> Shard& {
    return *step.shards[r.shards == 1 ? 0 : r.slots[j] % r.shards];
  };
  if (info.merge == Merge::kNone) {
    return run_part(r, shard_of(at[0]), c, r.words[at[0]], r.slots[at[0]], r.words, out, false);
  }
  if (together) {  // one op, its other keys' shards reached through the script's step
    if (at.empty()) {
      // (no key: its count is wrong, which the shard answers)
      return run_part(r, *step.shards[__builtin_ctzll(step.mask)], c, {}, 0, r.words, out, false,
                      &step);
    }
    return run_part(r, shard_of(at[0]), c, r.words[at[0]], r.slots[at[0]], r.words, out, false,
                    &step);
  }
  // Several keys: one part per key, the parts' replies added up, lined up or agreed on (the
  // request core's rule for the same commands).
  int64_t sum = 0;
  std::vector<ReplyItem> items;
  for (size_t j = 1; j < r.words.size(); j += info.step) {
    r.part.assign({r.words[0], r.words[j]});
    if (info.step == 2) r.part.push_back(r.words[j + 1]);
    r.part_reply.clear();
    run_part(r, shard_of(j), c, r.words[j], r.slots[j], r.part, r.part_reply, false);
    if (r.part_reply.is_error()) {
      out = r.part_reply;
      return;
    }
    if (!r.part_reply.items.empty()) sum += r.part_reply.items[0].n;
    for (size_t i = 1; i < r.part_reply.items.size(); ++i)
      items.push_back(std::move(r.part_reply.items[i]));
  }
  switch (info.merge) {
    case Merge::kSum:
      return out.integer(sum);
    case Merge::kConcat:
      out.array(static_cast<int64_t>(items.size()));
      for (auto& i : items) out.items.push_back(std::move(i));
      return;
    default:
      return out.ok();
  }
}

}  // namespace script
}  // namespace fg
