// The table of every command, looked up case-insensitively on each request.
#include "command_table.hpp"

#include <cctype>
#include <string>
#include <unordered_map>

#include "handlers.hpp"

namespace fg {

const std::vector<CommandSpec>& all_commands() {
  static const std::vector<CommandSpec> table = {
      {"cl.throttle", -5, kKeyed | kWrite | kFast, "floodgate", "0.1.0",
       "GCRA rate limit with redis-cell's semantics and reply",
       "key max_burst count period [quantity]", cmd_cl_throttle},
      {"fg.take", -2, kKeyed | kWrite | kFast, "floodgate", "0.1.0",
       "Consume from a key's limiter (named policy or inline kind and parameters)",
       "key [policy|kind params...] [COST n]", cmd_fg_take},
      {"fg.peek", -2, kKeyed | kFast, "floodgate", "0.1.0",
       "Evaluate a key's limiter without consuming", "key [policy|kind params...] [COST n]",
       cmd_fg_peek},
      {"fg.reset", 2, kKeyed | kWrite | kFast, "floodgate", "0.1.0", "Forget a key's limiter state",
       "key", cmd_fg_reset},
      {"fg.acquire", -2, kKeyed | kWrite | kFast, "floodgate", "0.1.0", "Take a concurrency lease",
       "key [limit ttl_ms|policy] [HOLDER id | BOUND]", cmd_fg_acquire},
      {"fg.renew", 4, kKeyed | kWrite | kFast, "floodgate", "0.1.0", "Extend one lease",
       "key lease ttl_ms", cmd_fg_renew},
      {"fg.release", 3, kKeyed | kWrite | kFast, "floodgate", "0.1.0", "Give a lease back",
       "key lease", cmd_fg_release},
      {"fg.count", 2, kKeyed | kFast, "floodgate", "0.1.0", "Live leases of a key", "key",
       cmd_fg_count},
      {"fg.heartbeat", 3, kWrite, "floodgate", "0.1.0", "Renew every lease of a holder",
       "holder ttl_ms", cmd_fg_heartbeat},
      {"fg.releaseall", 2, kWrite, "floodgate", "0.1.0", "Release every lease of a holder",
       "holder", cmd_fg_releaseall},
      {"fg.policy", -2, 0, "floodgate", "0.1.0",
       "Change or show policies, key patterns and per-key overrides, cluster-wide",
       "SET name kind params... | GET name | DEL name | LIST | MAP pattern policy | "
       "UNMAP pattern | PATTERNS | OVERRIDE key policy|kind params... | UNOVERRIDE key | "
       "OVERRIDES | WHICH key [policy]",
       cmd_fg_policy},
      {"ping", -1, kFast, "connection", "1.0.0", "Returns the server's liveliness response",
       "[message]", cmd_ping},
      {"echo", 2, kFast, "connection", "1.0.0", "Returns the given string", "message", cmd_echo},
      {"hello", -1, kNoAuth | kBarrier | kFast, "connection", "6.0.0", "Handshakes with the server",
       "[protover [AUTH username password] [SETNAME clientname]]", cmd_hello},
      {"auth", -2, kNoAuth | kBarrier | kFast, "connection", "1.0.0",
       "Authenticates the connection", "[username] password", cmd_auth},
      {"quit", -1, kNoAuth | kBarrier | kFast, "connection", "1.0.0", "Closes the connection", "",
       cmd_quit},
      {"select", 2, kFast, "connection", "1.0.0", "Selects the database (only 0 exists)", "index",
       cmd_select},
      {"client", -2, 0, "connection", "2.4.0", "Client connection commands",
       "SETNAME|GETNAME|ID|SETINFO|LIST|INFO|HELP ...", cmd_client},
      {"info", -1, kBarrier, "server", "1.0.0", "Returns information and statistics about the node",
       "[section ...]", cmd_info},
      {"command", -1, 0, "server", "2.8.13", "Returns detailed information about all commands",
       "[COUNT | LIST | INFO name... | DOCS [name...]]", cmd_command},
      {"config", -2, 0, "server", "2.0.0", "Reads configuration parameters",
       "GET parameter [parameter ...]", cmd_config},
      {"dbsize", 1, kBarrier | kFast, "server", "1.0.0", "Returns the number of limiter keys", "",
       cmd_dbsize},
      {"time", 1, kFast, "server", "2.6.0", "Returns the server time", "", cmd_time},
      {"cluster", -2, 0, "cluster", "3.0.0", "The cluster's topology and this node's place in it",
       "SLOTS | SHARDS | NODES | INFO | KEYSLOT key | MYID | HELP", cmd_cluster},
      {"asking", 1, kFast, "cluster", "3.0.0", "Accepted for cluster clients; changes nothing", "",
       cmd_asking},
      {"readonly", 1, kFast, "cluster", "3.0.0", "Accepted for cluster clients; changes nothing",
       "", cmd_asking},
      {"readwrite", 1, kFast, "cluster", "3.0.0", "Accepted for cluster clients; changes nothing",
       "", cmd_asking},
  };
  return table;
}

const CommandSpec* find_command(std::string_view name) {
  static const auto index = [] {
    std::unordered_map<std::string_view, const CommandSpec*> m;
    for (const auto& c : all_commands()) m.emplace(c.name, &c);
    return m;
  }();
  char buf[32];
  if (name.size() >= sizeof buf) return nullptr;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    buf[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c;
  }
  auto it = index.find(std::string_view(buf, name.size()));
  return it == index.end() ? nullptr : it->second;
}

std::string command_id_name(uint16_t id) {
  static constexpr const char* kNative[] = {
      "unknown",   "take",        "peek",    "reset",  "acquire", "renew",    "release", "count",
      "heartbeat", "release_all", "reserve", "commit", "cancel",  "topology", "ping"};
  const auto& all = all_commands();
  if (id < all.size()) return all[id].name;
  if (id >= kNativeCommandBase &&
      static_cast<size_t>(id - kNativeCommandBase) < std::size(kNative)) {
    return std::string("native.") + kNative[id - kNativeCommandBase];
  }
  return "unknown";
}

}  // namespace fg
