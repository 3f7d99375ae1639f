// Argument parsing shared by command handlers: strict integers, names, limiter specs.
#pragma once
#include <cstdint>
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

// Glob match as Redis's stringmatch (*, ?, [abc], [^a-z], \x), case-insensitive if asked.
bool glob_match(std::string_view pattern, std::string_view s, bool nocase);

}  // namespace fg
