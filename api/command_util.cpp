// Strict argument parsing helpers.
#include "command_util.hpp"

#include <strings.h>

#include <cctype>
#include <charconv>

#include "errors.hpp"

namespace fg {

bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  if (s[0] == '+' || (s.size() > 1 && s[0] == '0')) return false;  // as Redis's string2ll
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool parse_lease_id(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 16) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && out != 0;
}

namespace {
bool ms_to_ns(int64_t ms, int64_t& ns) {
  if (ms <= 0 || ms > kMaxPeriodNs / 1'000'000) return false;
  ns = ms * 1'000'000;
  return true;
}
}  // namespace

bool parse_limit(const std::vector<std::string_view>& args, size_t& i, const PolicyMap& policies,
                 LimitSpec& spec, std::string& error) {
  if (i >= args.size()) {
    error = err::kSyntax;
    return false;
  }
  const Kind kind = kind_from_name(args[i]);
  if (kind == Kind::kNone) {
    auto it = policies.find(args[i]);
    if (it == policies.end()) {
      error = "ERR unknown policy '" + std::string(args[i].substr(0, 128)) + "'";
      return false;
    }
    spec = it->second;
    ++i;
    return true;
  }
  const size_t nparams = (kind == Kind::kTokenBucket || kind == Kind::kGcra) ? 3 : 2;
  if (i + nparams >= args.size()) {
    error =
        "ERR " + std::string(kind_name(kind)) + " needs " + std::to_string(nparams) + " parameters";
    return false;
  }
  int64_t p[3] = {0, 0, 0};
  for (size_t k = 0; k < nparams; ++k) {
    if (!parse_int(args[i + 1 + k], p[k])) {
      error = err::kNotInteger;
      return false;
    }
  }
  i += 1 + nparams;
  int64_t ns = 0;
  if (!ms_to_ns(p[nparams - 1], ns)) {
    error = p[nparams - 1] <= 0 ? err::kNotPositive : err::kNotInteger;
    return false;
  }
  switch (kind) {
    case Kind::kTokenBucket:
      spec = LimitSpec::token_bucket(p[0], p[1], ns);
      break;
    case Kind::kGcra:
      spec = LimitSpec::gcra(p[0], p[1], ns);
      break;
    case Kind::kConcurrency:
      spec = LimitSpec::concurrency(p[0], ns);
      break;
    default:
      spec = LimitSpec::window(kind, p[0], ns);
      break;
  }
  std::string why = validate(spec);
  if (!why.empty()) {
    error = "ERR " + why;
    return false;
  }
  return true;
}

bool glob_match(std::string_view p, std::string_view s, bool nocase) {
  auto lower = [nocase](char c) {
    return nocase ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
  };
  size_t pi = 0, si = 0;
  while (pi < p.size()) {
    switch (p[pi]) {
      case '*': {
        while (pi + 1 < p.size() && p[pi + 1] == '*') ++pi;
        if (pi + 1 == p.size()) return true;
        for (size_t k = si; k <= s.size(); ++k)
          if (glob_match(p.substr(pi + 1), s.substr(k), nocase)) return true;
        return false;
      }
      case '?':
        if (si >= s.size()) return false;
        ++si;
        break;
      case '[': {
        if (si >= s.size()) return false;
        ++pi;
        bool negate = pi < p.size() && p[pi] == '^';
        if (negate) ++pi;
        bool match = false;
        while (pi < p.size() && p[pi] != ']') {
          if (p[pi] == '\\' && pi + 1 < p.size()) {
            ++pi;
            if (lower(p[pi]) == lower(s[si])) match = true;
          } else if (pi + 2 < p.size() && p[pi + 1] == '-') {
            char a = lower(p[pi]), b = lower(p[pi + 2]), c = lower(s[si]);
            if (a > b) std::swap(a, b);
            if (c >= a && c <= b) match = true;
            pi += 2;
          } else if (lower(p[pi]) == lower(s[si])) {
            match = true;
          }
          ++pi;
        }
        if (negate) match = !match;
        if (!match) return false;
        ++si;
        break;
      }
      case '\\':
        if (pi + 1 < p.size()) ++pi;
        [[fallthrough]];
      default:
        if (si >= s.size() || lower(p[pi]) != lower(s[si])) return false;
        ++si;
        break;
    }
    ++pi;
  }
  return si == s.size();
}

bool resolve_limit(const std::vector<std::string_view>& args, size_t& i, const PolicySet& set,
                   std::initializer_list<std::string_view> keywords, LimitSpec& spec,
                   std::string& error) {
  if (i < args.size() && kind_from_name(args[i]) != Kind::kNone) {
    return parse_limit(args, i, set.policies, spec, error);
  }
  std::string_view named;
  if (i < args.size()) {
    named = args[i];
    for (auto k : keywords)
      if (iequals(named, k)) named = {};
    if (!named.empty()) ++i;
  }
  const LimitSpec* p = set.lookup(args[1], named, error);
  if (!p) return false;
  spec = *p;
  return true;
}

const LimitSpec* policy_for(const std::vector<std::string_view>& args, const PolicySet& set) {
  if (args.size() < 2) return nullptr;
  const std::string_view cmd = args[0];
  const bool acquire = iequals(cmd, "fg.acquire");
  if (!acquire && !iequals(cmd, "fg.take") && !iequals(cmd, "fg.peek")) return nullptr;
  std::string_view named;
  if (args.size() > 2) {
    named = args[2];
    int64_t n;
    if (kind_from_name(named) != Kind::kNone || (acquire && parse_int(named, n))) return nullptr;
    if (iequals(named, "cost") || iequals(named, "holder") || iequals(named, "bound")) named = {};
  }
  std::string error;
  return set.lookup(args[1], named, error);
}

}  // namespace fg
