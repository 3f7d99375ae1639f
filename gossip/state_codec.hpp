// Encoding limiter state for the wire (state.proto), and validating it on the way in.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "entry_snapshot.hpp"
#include "key_slot.hpp"

namespace fg {

std::string encode_state(const std::vector<EntrySnapshot>& entries);
// The same for the entries [first, last), without copying them.
std::string encode_state(const EntrySnapshot* first, const EntrySnapshot* last);
// False, with `out` untouched, if the bytes are not a chunk this node fully understands
// and could install safely (unknown kind, wrong field count, oversized, disordered log).
bool decode_state(std::string_view bytes, std::vector<EntrySnapshot>& out);

// About how many bytes a snapshot takes encoded (for sizing chunks).
size_t approx_encoded_bytes(const EntrySnapshot& e);
// `entries` split into consecutive parts of about `max_bytes` each (at least one part,
// maybe empty): the chunks of a hand-off or a whole replica copy.
std::vector<std::vector<EntrySnapshot>> split_by_bytes(const std::vector<EntrySnapshot>& entries,
                                                       size_t max_bytes);

// A set of slots as a 2048-byte bitmap (bit s = slot s, little-endian within bytes).
std::string slots_to_bytes(const SlotBits& b);
bool slots_from_bytes(std::string_view in, SlotBits& b);

}  // namespace fg
