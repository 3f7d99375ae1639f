// Words as Redis reads them: strict decimal integers (string2ll's rules), case-insensitive
// names; glob patterns are glob.hpp's. Shared by nodes, commands and the CLI.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "glob.hpp"  // (glob patterns: Redis's words too)

namespace fg {

// The whole string as a decimal int64: an optional '-', no '+', no leading zeros, no spaces.
bool parse_int(std::string_view s, int64_t& out);
// `s` in ASCII lower case (command names, SHA1 digests).
std::string to_lower(std::string_view s);
// The whole string as a long double, as Redis's string2ld: no leading space, nothing after
// the number, no NaN, no overflow (inf itself is a number here).
bool parse_long_double(std::string_view s, long double& out);
// A long double as INCRBYFLOAT writes it (Redis's ld2string, human mode): 17 decimals,
// trailing zeros and a bare point removed, "inf"/"-inf", "-0" as "0".
std::string format_long_double(long double v);
bool iequals(std::string_view a, std::string_view b);
// Bytes as lower-case hex digits, two per byte (digests, random tokens).
std::string to_hex(std::string_view bytes);
// 1-16 hex digits, not zero: a lease id or reservation ticket as clients write it.
bool parse_lease_id(std::string_view s, uint64_t& out);

// XREAD's keys ([first, end) of `words`, its name first): the first half of the words after
// its first STREAMS word (Redis's keyword key spec); empty when there is none, or when an odd
// number of words follows it.
template <class Words>
std::pair<size_t, size_t> keys_after_streams(const Words& words) {
  for (size_t i = 1; i < words.size(); ++i) {
    if (!iequals(words[i], "streams")) continue;
    const size_t rest = words.size() - i - 1;
    if (rest == 0 || rest % 2 != 0) return {i + 1, i + 1};
    return {i + 1, i + 1 + rest / 2};
  }
  return {words.size(), words.size()};
}

}  // namespace fg
