// The node's side of the cluster-wide policy book: FG.POLICY writes and the config file go
// into the book (gossip/book.hpp, shared with every node); every change to the book, from
// here or from a peer, is parsed into a new PolicySet for the request path.
//
// Book keys: "policy/<name>" -> a definition ("sliding_log 100 60000 REPLICATION sync"),
// "pattern/<glob>" -> a policy name, "override/<key>" -> a policy name or a definition.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "book.hpp"
#include "clock.hpp"
#include "policy_registry.hpp"
#include "result.hpp"

namespace fg {

// A policy's definition as text: kind, parameters in milliseconds, then options.
std::string policy_definition(const LimitSpec& spec);
// Parses a definition from args[i..]: "<kind> <params...> [REPLICATION async|sync]
// [ON_UNAVAILABLE fail_open|fail_closed|error]".
Result<LimitSpec> parse_definition(const std::vector<std::string_view>& args, size_t i);
// Whether `name` can name a policy.
Status check_policy_name(std::string_view name);

// What the config file says about policies.
struct PolicyFile {
  PolicyMap policies;
  std::map<std::string, std::string> patterns;      // glob -> policy name
  std::map<std::string, PolicyOverride> overrides;  // key -> policy name or limit
};

class PolicyStore {
 public:
  PolicyStore(Book& book, PolicyRegistry& registry, const Clock& clock);
  ~PolicyStore();

  // Deletions say whether something was there.
  Status set_policy(const std::string& name, const LimitSpec& spec);
  Result<bool> del_policy(const std::string& name);
  Status map_pattern(const std::string& glob, const std::string& policy);
  bool unmap_pattern(const std::string& glob);
  Status set_override(const std::string& key, const PolicyOverride& o);
  bool del_override(const std::string& key);

  // Start-up: the file's entries carry its modification time as their version, so a
  // change made at runtime after the file was last edited wins over it.
  void load_file(const PolicyFile& f, uint64_t mtime_ms);
  // SIGHUP: entries the file changed, added or dropped since it was last read are written
  // now (they win everywhere); the rest stay as the cluster has them. Returns how many.
  size_t reload_file(const PolicyFile& f);

 private:
  static std::map<std::string, std::string> to_book(const PolicyFile& f);
  Status put(const std::string& key, const std::string& value);
  bool del(const std::string& key);
  void rebuild();

  Book& book_;
  PolicyRegistry& registry_;
  const Clock& clock_;
  int listener_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, std::string> file_;  // book key -> value, as the file last said
};

}  // namespace fg
