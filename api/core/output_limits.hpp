// client-output-buffer-limit, in Redis's words: per class of client (normal, replica,
// pubsub) a hard limit (past it the client is closed at once), a soft limit and the seconds
// a client may stay past it. 0 means none.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "live_value.hpp"
#include "result.hpp"

namespace fg {

// (each part a LiveValue: CONFIG SET changes them while connections read them)
struct OutputLimit {
  OutputLimit() = default;
  OutputLimit(int64_t hard, int64_t soft, int64_t seconds)
      : hard_bytes(hard), soft_bytes(soft), soft_s(seconds) {}
  LiveValue<int64_t> hard_bytes{0};
  LiveValue<int64_t> soft_bytes{0};
  LiveValue<int64_t> soft_s{0};
};

struct OutputLimits {
  OutputLimit normal;                            // what clients get (RESP)
  OutputLimit replica{256 << 20, 64 << 20, 60};  // (kept for CONFIG GET: no replicas here)
  OutputLimit pubsub{32 << 20, 8 << 20, 60};     // subscribers, once there are any
};

// Applies "class hard soft seconds [class hard soft seconds ...]" (sizes as Redis takes
// them: 1mb, 64k, 2gb, plain bytes; class normal, replica or slave, pubsub) to `limits`;
// or why not (nothing changes then), in Redis's words.
Status apply_output_limits(std::string_view text, OutputLimits& limits);

// A size as Redis reads one: digits, then b, k (1000), kb (1024), m, mb, g or gb, in any
// case; -1 if it is not one (or past 2^50).
int64_t parse_size(std::string_view text);

// CONFIG GET's value: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60".
std::string describe_output_limits(const OutputLimits& limits);

}  // namespace fg
