// The settings table: one row per node setting — its YAML key (also its CONFIG GET name),
// its flag, how its text is read and checked, its range, whether CONFIG GET shows it, and
// its help line. The flags (main.cpp), the YAML reader (config.cpp), CONFIG GET and --help
// are all made from it; node/SETTINGS.md's list of settings is checked against it by
// tests/node/config_test.cpp. (What a SIGHUP re-reads is Node::reload's; SETTINGS.md
// says which.)
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "config.hpp"

namespace fg {

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
};

const std::vector<Setting>& settings();
const Setting* find_setting(const std::string& key);

// CONFIG GET's answers: every shown setting with its value in `cfg`, and Redis's "save"
// made from dir and save-interval.
std::vector<std::pair<std::string, std::string>> config_values(const NodeConfig& cfg);

}  // namespace fg
