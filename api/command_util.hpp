// Argument parsing shared by command handlers: strict integers, names, limiter specs.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "limit_spec.hpp"
#include "policy_registry.hpp"

namespace fg {

bool parse_int(std::string_view s, int64_t& out);  // whole string, decimal, optional '-'
bool iequals(std::string_view a, std::string_view b);
bool parse_lease_id(std::string_view s, uint64_t& out);  // 1-16 hex digits, not zero

// Parses a limit at args[i]: a policy name, or an inline "<kind> <params...>" with
// durations in milliseconds. Advances i past what it used. On failure returns false and
// sets `error` to the reply text.
bool parse_limit(const std::vector<std::string_view>& args, size_t& i, const PolicyMap& policies,
                 LimitSpec& spec, std::string& error);

// The limit at args[i] for `key`: an inline "<kind> <params...>", a policy name (unless
// args[i] is one of `keywords`, which start the command's options), or nothing — then the
// key's override or the most specific mapped key pattern decides. A per-key override wins
// over a named policy (not over an inline limit). Advances i past what it used.
bool resolve_limit(const std::vector<std::string_view>& args, size_t& i, const PolicySet& set,
                   std::initializer_list<std::string_view> keywords, LimitSpec& spec,
                   std::string& error);
// The policy a FG.TAKE/PEEK/ACQUIRE names or is mapped to, for its fail mode; null if
// inline or none.
const LimitSpec* policy_for(const std::vector<std::string_view>& args, const PolicySet& set);

// Glob match as Redis's stringmatch (*, ?, [abc], [^a-z], \x), case-insensitive if asked.
bool glob_match(std::string_view pattern, std::string_view s, bool nocase);

}  // namespace fg
