// Words as Redis reads them: strict decimal integers (string2ll's rules), case-insensitive
// names and glob patterns (stringmatch's rules). Shared by nodes, commands and the CLI.
#pragma once
#include <cstdint>
#include <string_view>

namespace fg {

// The whole string as a decimal int64: an optional '-', no '+', no leading zeros, no spaces.
bool parse_int(std::string_view s, int64_t& out);
bool iequals(std::string_view a, std::string_view b);
// 1-16 hex digits, not zero: a lease id or reservation ticket as clients write it.
bool parse_lease_id(std::string_view s, uint64_t& out);
// Glob match as Redis's stringmatch (*, ?, [abc], [^a-z], \x), case-insensitive if asked.
bool glob_match(std::string_view pattern, std::string_view s, bool nocase);

}  // namespace fg
