// Calendar windows: "1000 a day in Europe/Berlin" — a window from local midnight to the next
// (the Monday of an ISO 8601 week, the 1st of a month, the 1st of January), in a zone of the
// system's tz database, read through cctz. Days of 23 and 25 hours are what the zone says;
// a midnight the zone skips starts the day at the instant the clock jumps.
//
// A calendar window's LimitSpec keeps its unit and zone in `b` (calendar_b) so that it
// travels like every limit (forward codec, replication, snapshots): the zone as a 32-bit id
// every node computes alike from its name (FNV-1a), resolved against the names this node's
// tz database has (a name it lacks is refused where the limit is made).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "result.hpp"

namespace fg {

enum class CalendarUnit : uint8_t { kNone = 0, kDay = 1, kWeek = 2, kMonth = 3, kYear = 4 };

std::string_view calendar_unit_name(CalendarUnit u);
CalendarUnit calendar_unit_from_name(std::string_view name);  // case-insensitive; kNone

// The id of a zone of the tz database ("UTC", "Europe/Berlin"), loading it; an unknown name
// (or one that is not a zone: "localtime", a path) is refused with err::kUnknownTimeZone.
Result<uint32_t> calendar_zone(std::string_view name);
bool calendar_zone_known(uint32_t id);
std::string calendar_zone_name(uint32_t id);  // "" when unknown

inline int64_t calendar_b(CalendarUnit unit, uint32_t zone) {
  return static_cast<int64_t>(zone) << 8 | static_cast<int64_t>(unit);
}
inline CalendarUnit calendar_unit_of(int64_t b) { return static_cast<CalendarUnit>(b & 0xff); }
inline uint32_t calendar_zone_of(int64_t b) { return static_cast<uint32_t>(b >> 8); }

// The longest a window of the unit can be (a day: 24 h and a zone's largest jump), for a
// clock that went backwards: a window ending further ahead than this is not current.
int64_t calendar_max_span_ns(CalendarUnit unit);

struct CalendarWindow {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};
// The window of `b` (calendar_b) holding the instant `now_ns` (ns since the epoch, UTC).
CalendarWindow calendar_window_at(int64_t b, int64_t now_ns);

}  // namespace fg
