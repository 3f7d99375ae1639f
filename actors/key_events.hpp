// Keyspace notifications (Redis's notify.c): with notify-keyspace-events set, a command that
// changes a key publishes `__keyspace@0__:<key> <event>` and `__keyevent@0__:<event> <key>`
// on the node's pub/sub, which carries them to every node of the cluster. Off (the default),
// a data command pays one relaxed load.
//
// A shard collects one data command's events as it runs (Shard::data: the keys it marked
// changed or gone, the keys it made, those that expired on the way, and any event a command
// names itself) in the KeyEventLog of its thread, and publishes them once it is done: a
// command that names none gets its row's event (key_events.cpp) for each key it changed,
// and "del" for each it emptied, as Redis's commands call notifyKeyspaceEvent.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fg {

// Redis's classes, with its bits (server.h).
namespace notify {
constexpr uint32_t kKeyspace = 1u << 0;  // K
constexpr uint32_t kKeyevent = 1u << 1;  // E
constexpr uint32_t kGeneric = 1u << 2;   // g
constexpr uint32_t kString = 1u << 3;    // $
constexpr uint32_t kList = 1u << 4;      // l
constexpr uint32_t kSet = 1u << 5;       // s
constexpr uint32_t kHash = 1u << 6;      // h
constexpr uint32_t kZSet = 1u << 7;      // z
constexpr uint32_t kExpired = 1u << 8;   // x
constexpr uint32_t kEvicted = 1u << 9;   // e
constexpr uint32_t kStream = 1u << 10;   // t
constexpr uint32_t kKeyMiss = 1u << 11;  // m
constexpr uint32_t kModule = 1u << 13;   // d
constexpr uint32_t kNew = 1u << 14;      // n
// A: every class but m and n
constexpr uint32_t kAll =
    kGeneric | kString | kList | kSet | kHash | kZSet | kExpired | kEvicted | kStream | kModule;
}  // namespace notify

// notify-keyspace-events' letters ("KEA", "Kl$"...) as Redis reads them; false for a letter
// it does not know. And the flags as Redis writes them back (CONFIG GET: "AKE").
bool parse_notify_flags(std::string_view letters, uint32_t& flags);
std::string notify_flags_text(uint32_t flags);

class KeyEvents {
 public:
  // Publishes one message on a channel, to every node (false: it was dropped, the bus full).
  using Publish = std::function<bool(std::string_view channel, std::string_view message)>;
  void set_flags(uint32_t flags) { flags_.store(flags, std::memory_order_relaxed); }
  uint32_t flags() const { return flags_.load(std::memory_order_relaxed); }
  // Whether any event would be published (a class, and K or E).
  bool active() const {
    const uint32_t f = flags();
    return (f & (notify::kKeyspace | notify::kKeyevent)) != 0 &&
           (f & ~(notify::kKeyspace | notify::kKeyevent)) != 0;
  }
  // How events leave the node (set once, before any shard runs; unset: nowhere).
  void set_publish(Publish p) { publish_ = std::move(p); }
  // Publishes `event` on `key` if its class is on.
  void emit(uint32_t cls, std::string_view event, std::string_view key);

  std::atomic<uint64_t> published{0};  // messages published (INFO)
  std::atomic<uint64_t> dropped{0};    // not published: the cluster bus was full

 private:
  std::atomic<uint32_t> flags_{0};
  Publish publish_;
};

// The node's (one per process; a plain global, so a data command's check is one load).
extern KeyEvents g_key_events;
inline KeyEvents& key_events() { return g_key_events; }

// One data command's events, collected while it runs on this thread (Shard::data).
struct KeyEventLog {
  struct Item {
    uint32_t cls = 0;   // 0: a key the command changed (`gone`: emptied or deleted)
    std::string event;  // (cls set) the event
    std::string key;
    bool gone = false;
  };
  std::vector<Item> items;
  bool named = false;  // the command named its events: changed keys get no row event
};
// (inline with its initializer in sight: reading it is one TLS load, no wrapper call)
inline thread_local KeyEventLog* t_key_events = nullptr;

// A changed key (Shard::mark, mark_gone), an event a command names, one that comes on the way
// (a key made, a key found expired): into this thread's log, if a command collects one.
inline void log_changed(std::string_view key, bool gone) {
  if (KeyEventLog* log = t_key_events) log->items.push_back({0, {}, std::string(key), gone});
}
inline void log_event(uint32_t cls, std::string_view event, std::string_view key,
                      bool named = true) {
  if (KeyEventLog* log = t_key_events) {
    log->items.push_back({cls, std::string(event), std::string(key), false});
    if (named) log->named = true;
  }
}

// Publishes a finished command's log: `command` its row's name (data_cmd.hpp), `words` its
// arguments (the direction of LMPOP, the options of SET...).
void publish_events(const KeyEventLog& log, std::string_view command,
                    const std::vector<std::string_view>& words);

}  // namespace fg
