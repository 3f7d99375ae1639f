// Pub/sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE SSUBSCRIBE SUNSUBSCRIBE
// PUBLISH SPUBLISH PUBSUB, with Redis 7.0's replies. Subscriptions live in the connection
// (CommandContext::subscriptions) and the node's hub; a PUBLISH reaches this node's
// subscribers at once and the other nodes' over the cluster bus.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <string>

#include "command_context.hpp"
#include "errors.hpp"
#include "handlers.hpp"
#include "key_slot.hpp"
#include "words.hpp"

namespace fg {

namespace {

// One confirmation: [kind, channel (or null: nothing to let go of), count], a push in RESP3.
void confirm(CommandContext& s, std::string_view kind, const std::string_view* channel,
             int64_t count) {
  RespWriter w = s.local();
  w.push(3);
  w.bulk(kind);
  if (channel) {
    w.bulk(*channel);
  } else {
    w.null();
  }
  w.integer(count);
}

// Shard channels in a cluster are keys of a slot (Redis Cluster's rule): one slot per
// command, and a cluster client is sent to the slot's owner. False when answered here.
bool shard_channels_here(CommandContext& s, const Args& a, size_t first, size_t last) {
  const Routing* rt = s.routing();
  if (!rt || last < first) return true;
  const uint32_t slot = key_slot(a[first]);
  for (size_t j = first + 1; j <= last; ++j) {
    if (key_slot(a[j]) != slot) {
      s.local().error(err::kCrossSlot);
      return false;
    }
  }
  if (!s.redirects() || rt->epoch == 0) return true;
  const uint16_t owner = rt->owner[slot];
  if (owner == kNoOwner || static_cast<int>(owner) == rt->self_index) return true;
  const RouteNode& n = rt->nodes[owner];
  s.svc().counters.moved.fetch_add(1, std::memory_order_relaxed);
  s.local().error(err::moved(slot, n.resp_host, n.resp_port));
  return false;
}

// Whether one more subscription fits (max-subscriptions, the user's share); else the error,
// and the rest of the command's channels are not subscribed.
bool room_for(CommandContext& s, Subscriptions& subs) {
  subs.set_owner(s.svc().accounts, s.acl().account());
  if (subs.room(s.svc().settings.max_subscriptions)) return true;
  s.local().error(err::kMaxSubscriptions);
  return false;
}

void subscribe(CommandContext& s, Args& a, ChannelKind k) {
  Subscriptions& subs = s.subscriptions();
  const bool shard = k == ChannelKind::kShard;
  if (shard && !shard_channels_here(s, a, 1, a.size() - 1)) return;
  for (size_t j = 1; j < a.size(); ++j) {
    if (!subs.has(k, a[j]) && !room_for(s, subs)) return;
    subs.subscribe(k, a[j]);
    confirm(s, shard ? "ssubscribe" : "subscribe", &a[j],
            shard ? subs.shard_count() : subs.count());
  }
}

void unsubscribe(CommandContext& s, Args& a, ChannelKind k) {
  Subscriptions& subs = s.subscriptions();
  const bool shard = k == ChannelKind::kShard;
  const char* kind = shard ? "sunsubscribe" : "unsubscribe";
  auto count = [&] { return shard ? subs.shard_count() : subs.count(); };
  if (a.size() > 1) {
    for (size_t j = 1; j < a.size(); ++j) {
      subs.unsubscribe(k, a[j]);
      confirm(s, kind, &a[j], count());
    }
    return;
  }
  const std::vector<std::string> all = subs.channels(k);
  for (const std::string& c : all) {
    subs.unsubscribe(k, c);
    const std::string_view v = c;
    confirm(s, kind, &v, count());
  }
  if (all.empty()) confirm(s, kind, nullptr, count());
}

constexpr const char* kHelp[] = {
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Print this help.",
};

}  // namespace

void cmd_subscribe(CommandContext& s, Args& a) { subscribe(s, a, ChannelKind::kChannel); }
void cmd_ssubscribe(CommandContext& s, Args& a) { subscribe(s, a, ChannelKind::kShard); }
void cmd_unsubscribe(CommandContext& s, Args& a) { unsubscribe(s, a, ChannelKind::kChannel); }
void cmd_sunsubscribe(CommandContext& s, Args& a) { unsubscribe(s, a, ChannelKind::kShard); }

void cmd_psubscribe(CommandContext& s, Args& a) {
  Subscriptions& subs = s.subscriptions();
  for (size_t j = 1; j < a.size(); ++j) {
    if (!subs.has_pattern(a[j]) && !room_for(s, subs)) return;
    subs.psubscribe(a[j]);
    confirm(s, "psubscribe", &a[j], subs.count());
  }
}

void cmd_punsubscribe(CommandContext& s, Args& a) {
  Subscriptions& subs = s.subscriptions();
  if (a.size() > 1) {
    for (size_t j = 1; j < a.size(); ++j) {
      subs.punsubscribe(a[j]);
      confirm(s, "punsubscribe", &a[j], subs.count());
    }
    return;
  }
  const std::vector<std::string> all = subs.patterns();
  for (const std::string& p : all) {
    subs.punsubscribe(p);
    const std::string_view v = p;
    confirm(s, "punsubscribe", &v, subs.count());
  }
  if (all.empty()) confirm(s, "punsubscribe", nullptr, subs.count());
}

// PUBLISH channel message: this node's receivers (as Redis Cluster counts: the node's own).
void cmd_publish(CommandContext& s, Args& a) {
  const int64_t n =
      s.svc().pubsub.publish_everywhere(ChannelKind::kChannel, a[1], a[2], s.client().bus_bytes);
  if (n < 0) return s.local().error(err::kBusFull);
  s.local().integer(n);
}

void cmd_spublish(CommandContext& s, Args& a) {
  if (!shard_channels_here(s, a, 1, 1)) return;
  const int64_t n =
      s.svc().pubsub.publish_everywhere(ChannelKind::kShard, a[1], a[2], s.client().bus_bytes);
  if (n < 0) return s.local().error(err::kBusFull);
  s.local().integer(n);
}

// PUBSUB CHANNELS | NUMSUB | NUMPAT | SHARDCHANNELS | SHARDNUMSUB | HELP: this node's.
void cmd_pubsub(CommandContext& s, Args& a) {
  const std::string_view sub = a[1];
  const PubSubHub& hub = s.svc().pubsub;
  const size_t n = a.size();
  RespWriter w = s.local();
  auto arity_error = [&] {
    std::string name(sub.substr(0, 32));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    w.error(err::wrong_arity("pubsub|" + name));
  };
  const bool shard_list = iequals(sub, "shardchannels");
  const bool shard_count = iequals(sub, "shardnumsub");
  if (iequals(sub, "help") && n == 2) {
    w.help(kHelp);
  } else if (iequals(sub, "channels") || shard_list) {
    if (n > 3) return arity_error();
    const std::string_view* pattern = n == 3 ? &a[2] : nullptr;
    const auto list =
        hub.channels(shard_list ? ChannelKind::kShard : ChannelKind::kChannel, pattern);
    w.array(list.size());
    for (const std::string& c : list) w.bulk(c);
  } else if (iequals(sub, "numsub") || shard_count) {
    w.array((n - 2) * 2);
    for (size_t j = 2; j < n; ++j) {
      w.bulk(a[j]);
      w.integer(hub.numsub(shard_count ? ChannelKind::kShard : ChannelKind::kChannel, a[j]));
    }
  } else if (iequals(sub, "numpat")) {
    if (n != 2) return arity_error();
    w.integer(hub.numpat());
  } else {
    w.error(err::unknown_subcommand(sub, "PUBSUB HELP"));
  }
}

}  // namespace fg
