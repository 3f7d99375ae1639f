// Calendar windows: the zone table and the local-midnight arithmetic (calendar.hpp).
#include "calendar.hpp"

#include <cctz/civil_time.h>
#include <cctz/time_zone.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unordered_map>

#include "errors.hpp"
#include "words.hpp"

namespace fg {

namespace {

constexpr int64_t kNsPerS = 1'000'000'000;
constexpr int64_t kDayNs = 24 * 3600 * kNsPerS;

uint32_t fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

struct Zone {
  std::string name;  // empty: two names of the database share this id (both refused)
  bool loaded = false;
  cctz::time_zone tz;
};

// Every zone name of the tz database, by id, read once (on the first calendar limit): the
// files under TZDIR (or /usr/share/zoneinfo) that are TZif files, without the posix/ and
// right/ copies. Only these names are zones here — not "localtime", not a path of the
// caller's choosing — so nodes with the same database agree on every name.
class ZoneTable {
 public:
  static ZoneTable& get() {
    static ZoneTable t;
    return t;
  }

  const Zone* find(uint32_t id) {
    std::lock_guard lock(mu_);
    scan();
    auto it = zones_.find(id);
    if (it == zones_.end() || it->second.name.empty()) return nullptr;
    Zone& z = it->second;
    if (!z.loaded) {
      if (!cctz::load_time_zone(z.name, &z.tz)) return nullptr;  // (unreadable now)
      z.loaded = true;
    }
    return &z;
  }

 private:
  void scan() {
    if (scanned_) return;
    scanned_ = true;
    add("UTC");  // (there even without a tz database: cctz knows it)
    const char* env = std::getenv("TZDIR");
    const std::filesystem::path root = env && *env ? env : "/usr/share/zoneinfo";
    std::error_code ec;
    const std::filesystem::path real_root = std::filesystem::canonical(root, ec);
    if (ec) return;
    std::filesystem::recursive_directory_iterator it(root, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const std::string rel = it->path().lexically_relative(root).string();
      if (it->is_directory(ec)) {
        if (rel == "posix" || rel == "right") it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(ec) || rel == "UTC" || rel == "localtime") continue;
      // (a link out of the database — localtime is one on Debian — is this machine's choice)
      const auto real = std::filesystem::canonical(it->path(), ec);
      if (ec || real.lexically_relative(real_root).string().rfind("..", 0) == 0) {
        ec.clear();
        continue;
      }
      std::ifstream f(it->path(), std::ios::binary);
      char magic[4] = {};
      if (f.read(magic, 4) && std::string_view(magic, 4) == "TZif") add(rel);
    }
  }
  void add(const std::string& name) {
    auto [it, fresh] = zones_.try_emplace(fnv1a(name));
    if (fresh) {
      it->second.name = name;
    } else if (it->second.name != name) {
      it->second.name.clear();
    }
  }

  std::mutex mu_;
  bool scanned_ = false;
  std::unordered_map<uint32_t, Zone> zones_;
};

int64_t instant_ns(const cctz::time_zone& tz, const cctz::civil_second& cs) {
  const cctz::time_zone::civil_lookup l = tz.lookup(cs);
  // A midnight the zone skips: the day starts when the clock jumps; one it repeats: at the
  // first of the two.
  const auto tp = l.kind == cctz::time_zone::civil_lookup::SKIPPED ? l.trans : l.pre;
  return static_cast<int64_t>(tp.time_since_epoch().count()) * kNsPerS;
}

constexpr std::string_view kUnitNames[] = {"", "day", "week", "month", "year"};

}  // namespace

std::string_view calendar_unit_name(CalendarUnit u) {
  const auto i = static_cast<size_t>(u);
  return i < std::size(kUnitNames) ? kUnitNames[i] : "";
}

CalendarUnit calendar_unit_from_name(std::string_view name) {
  for (size_t i = 1; i < std::size(kUnitNames); ++i) {
    if (iequals(name, kUnitNames[i])) return static_cast<CalendarUnit>(i);
  }
  return CalendarUnit::kNone;
}

// Each thread remembers the last zone it looked up (requests of one limit come in runs), so
// the table's lock is not on every request's path. Zones are never unloaded: the pointers
// stay good.
namespace {
struct LastZone {
  uint32_t id = 0;
  const Zone* zone = nullptr;
};
thread_local LastZone last_zone;

const Zone* find_zone(uint32_t id) {
  if (last_zone.zone && last_zone.id == id) return last_zone.zone;
  const Zone* z = ZoneTable::get().find(id);
  if (z) last_zone = {id, z};
  return z;
}
}  // namespace

Result<uint32_t> calendar_zone(std::string_view name) {
  if (name.empty() || name.size() > 64) return Error{err::kUnknownTimeZone};
  const uint32_t id = fnv1a(name);
  const Zone* z = find_zone(id);
  if (!z || z->name != name) return Error{err::kUnknownTimeZone};
  return id;
}

bool calendar_zone_known(uint32_t id) { return find_zone(id) != nullptr; }

std::string calendar_zone_name(uint32_t id) {
  const Zone* z = find_zone(id);
  return z ? z->name : std::string();
}

int64_t calendar_max_span_ns(CalendarUnit unit) {
  switch (unit) {
    case CalendarUnit::kDay:
      return 2 * kDayNs;  // (zones have jumped by up to a day: Samoa, 2011)
    case CalendarUnit::kWeek:
      return 8 * kDayNs;
    case CalendarUnit::kMonth:
      return 32 * kDayNs;
    default:
      return 367 * kDayNs;
  }
}

CalendarWindow calendar_window_at(int64_t b, int64_t now_ns) {
  const Zone* z = find_zone(calendar_zone_of(b));
  const cctz::time_zone tz = z ? z->tz : cctz::utc_time_zone();  // (validated where made)
  const int64_t s = now_ns >= 0 ? now_ns / kNsPerS : -((-now_ns + kNsPerS - 1) / kNsPerS);
  const cctz::civil_second local =
      cctz::convert(cctz::time_point<cctz::seconds>(cctz::seconds(s)), tz);
  cctz::civil_second from, to;
  switch (calendar_unit_of(b)) {
    case CalendarUnit::kWeek: {  // ISO 8601: weeks start on Monday
      const cctz::civil_day d(local);
      const cctz::civil_day monday = d - static_cast<int>(cctz::get_weekday(d));
      from = cctz::civil_second(monday);
      to = cctz::civil_second(monday + 7);
      break;
    }
    case CalendarUnit::kMonth: {
      const cctz::civil_month m(local);
      from = cctz::civil_second(m);
      to = cctz::civil_second(m + 1);
      break;
    }
    case CalendarUnit::kYear: {
      const cctz::civil_year y(local);
      from = cctz::civil_second(y);
      to = cctz::civil_second(y + 1);
      break;
    }
    default: {
      const cctz::civil_day d(local);
      from = cctz::civil_second(d);
      to = cctz::civil_second(d + 1);
      break;
    }
  }
  return {instant_ns(tz, from), instant_ns(tz, to)};
}

}  // namespace fg
