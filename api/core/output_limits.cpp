// Reads and writes client-output-buffer-limit's value as redis-server does.
#include "output_limits.hpp"

#include <cctype>
#include <charconv>
#include <vector>

namespace fg {

namespace {

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

}  // namespace

// A size as Redis reads one: digits, then b, k, kb, m, mb, g or gb (any case); -1 if not.
int64_t parse_size(std::string_view w) {
  size_t digits = 0;
  while (digits < w.size() && std::isdigit(static_cast<unsigned char>(w[digits]))) ++digits;
  int64_t n = 0;
  if (digits == 0 || std::from_chars(w.data(), w.data() + digits, n).ec != std::errc()) return -1;
  std::string unit;
  for (char c : w.substr(digits))
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const struct {
    const char* name;
    int64_t times;
  } units[] = {{"", 1},        {"b", 1},        {"k", 1000},       {"kb", 1024},
               {"m", 1000000}, {"mb", 1 << 20}, {"g", 1000000000}, {"gb", int64_t{1} << 30}};
  for (const auto& u : units) {
    if (unit == u.name) return n > (int64_t{1} << 50) / u.times ? -1 : n * u.times;
  }
  return -1;
}

Status apply_output_limits(std::string_view text, OutputLimits& limits) {
  const auto w = words(text);
  if (w.empty() || w.size() % 4 != 0)
    return Error{"Wrong number of arguments in buffer limit configuration."};
  OutputLimits next = limits;
  for (size_t i = 0; i < w.size(); i += 4) {
    OutputLimit* l = w[i] == "normal"                       ? &next.normal
                     : w[i] == "replica" || w[i] == "slave" ? &next.replica
                     : w[i] == "pubsub"                     ? &next.pubsub
                                                            : nullptr;
    if (!l) return Error{"Invalid client class specified in buffer limit configuration."};
    const int64_t hard = parse_size(w[i + 1]), soft = parse_size(w[i + 2]);
    int64_t secs = -1;
    if (std::from_chars(w[i + 3].data(), w[i + 3].data() + w[i + 3].size(), secs).ec !=
            std::errc() ||
        hard < 0 || soft < 0 || secs < 0) {
      return Error{"Error in hard, soft or soft_seconds setting in buffer limit configuration."};
    }
    *l = OutputLimit{hard, soft, secs};
  }
  limits = next;
  return {};
}

std::string describe_output_limits(const OutputLimits& limits) {
  auto one = [](const char* name, const OutputLimit& l) {
    return std::string(name) + " " + std::to_string(l.hard_bytes) + " " +
           std::to_string(l.soft_bytes) + " " + std::to_string(l.soft_s);
  };
  return one("normal", limits.normal) + " " + one("slave", limits.replica) + " " +
         one("pubsub", limits.pubsub);
}

}  // namespace fg
