// The arguments of the SCAN family (db.c's scanGenericCommand), shared by SCAN, HSCAN, SSCAN
// and ZSCAN.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "data_reply.hpp"

namespace fg {

// A SCAN cursor as Redis reads it (strtoul, to the end, no leading space, no overflow): an
// optional sign, decimal digits, or nothing at all (cursor 0). Only whether it is 0 matters
// here: every scan answers all at once, under cursor 0. out: 0, or 1 for any other cursor.
bool parse_unsigned_cursor(std::string_view s, int64_t& out);

// The options from word `from` on: MATCH pattern, COUNT n (at least 1; a hint, as there),
// and for SCAN only TYPE type. False, with the error replied, on any other.
bool parse_scan_options(const std::vector<std::string_view>& a, size_t from, bool with_type,
                        std::string_view& pattern, std::string_view& type, DataReply& r);

}  // namespace fg
