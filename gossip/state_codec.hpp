// Encoding limiter state for the wire (state.proto), and validating it on the way in.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "entry_snapshot.hpp"

namespace fg {

std::string encode_state(const std::vector<EntrySnapshot>& entries);
// False, with `out` untouched, if the bytes are not a chunk this node fully understands
// and could install safely (unknown kind, wrong field count, oversized, disordered log).
bool decode_state(std::string_view bytes, std::vector<EntrySnapshot>& out);

}  // namespace fg
