// Reading RESP replies (what a client or a test does with a node's output).
#pragma once
#include <cstddef>

namespace fg {

// Length of the first whole RESP value in [p, p+n), or 0 if there is none yet (or it is not
// RESP). Nesting deeper than 16 levels counts as not RESP.
size_t resp_value_length(const char* p, size_t n, int depth = 0);

}  // namespace fg
