// The settings table: one row per node setting — its YAML key (also its CONFIG GET name),
// its flag, how its text is read and checked, its range, whether CONFIG GET shows it, its
// help line, and, for one a running node can take, the hook that puts it in force. The
// flags (main.cpp), the YAML reader (config.cpp), CONFIG GET, SET and REWRITE (Node) and
// --help are all made from it; node/SETTINGS.md's list of settings is checked against it by
// tests/node/config_test.cpp. (What a SIGHUP re-reads is Node::reload's; SETTINGS.md
// says which.)
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"

namespace fg {

class Accounts;
class ClientRegistry;
struct ConnectionLimits;
struct Services;

// What a running node lets its settings change (Node implements it): the settings rows'
// apply hooks reach the node's parts through it.
class RunningNode {
 public:
  virtual ~RunningNode() = default;
  virtual Services& services() = 0;
  virtual ClientRegistry& clients() = 0;
  virtual ConnectionLimits& connection_limits() = 0;
  virtual Accounts& accounts() = 0;
  virtual void set_default_password(const std::string& pw) = 0;  // requirepass
  virtual void shares_changed() = 0;  // a node-wide cap or user-share: each user's share again
  virtual void set_replication_lag(int64_t ms) = 0;  // (a cluster member's replicator)
};

struct Setting {
  const char* key;   // YAML key and CONFIG GET name: "query-deadline"
  const char* flag;  // command-line flag: "--query-deadline-ms"
  const char* help;  // one line, for --help
  const char* type;  // what --help shows for its value: "INT", "DURATION", "yes|no", ...
  // Reads one value (a flag's, or a YAML scalar's text) into the config; or why not, in
  // words that follow the key ("must be between 0 and 65535").
  std::function<Status(NodeConfig&, const std::string&)> set = nullptr;
  // The value in force, as CONFIG GET answers and --help shows the default ("" : none).
  std::function<std::string(const NodeConfig&)> get = nullptr;
  // A list (a repeatable flag, a YAML sequence): `clear` empties it before a new list is
  // read, unless null (then each value is applied on top: client-output-buffer-limit's
  // classes).
  bool list = false;
  std::function<void(NodeConfig&)> clear = nullptr;
  bool presence = false;  // the flag takes no value: given means yes
  bool shown = true;      // CONFIG GET answers it (not for secrets)
  // Puts the value `cfg` holds in force on a running node (CONFIG SET); null: read at start
  // only (CONFIG SET answers that it is immutable).
  std::function<void(RunningNode&, const NodeConfig&)> apply = nullptr;
  // A number's or a duration's range (ms), as set() checks it and --help shows it.
  bool ranged = false;
  int64_t lo = 0, hi = 0;
  // Other names CONFIG GET and CONFIG SET know it by: its flag's, less the dashes, when that
  // differs from the key, and Redis's where Redis names it otherwise ("loglevel").
  std::vector<std::string> names = {};

  // The value a node given nothing has, as CONFIG GET answers it ("" : none). (The default
  // is NodeConfig's member initializer: one place.)
  std::string default_value() const { return get ? get(NodeConfig{}) : std::string(); }
};

const std::vector<Setting>& settings();
const Setting* find_setting(const std::string& key);
// By any of its names (key, flag's, Redis's), in any case: CONFIG GET and SET's lookup.
const Setting* find_setting_named(std::string_view name);

// CONFIG GET's answers: every shown setting with its value in `cfg`, and Redis's "save"
// made from dir and save-interval.
std::vector<std::pair<std::string, std::string>> config_values(const NodeConfig& cfg);

}  // namespace fg
