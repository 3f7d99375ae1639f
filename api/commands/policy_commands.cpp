// FG.POLICY: named policies, key patterns and per-key overrides, changed at runtime and
// spread to every node through the cluster-wide book (see policy_store.hpp).
#include <string>

#include "calendar.hpp"
#include "command_context.hpp"
#include "errors.hpp"
#include "handlers.hpp"
#include "key_table.hpp"
#include "policy_store.hpp"
#include "rls_config.hpp"
#include "words.hpp"

namespace fg {

namespace {
constexpr char kHelp[] =
    "SET, GET, DEL, LIST, MAP, UNMAP, PATTERNS, OVERRIDE, UNOVERRIDE, OVERRIDES, WHICH";

// name (when given), kind, parameters, replication, on_unavailable, shadow, slices.
void write_policy(RespWriter& w, std::string_view name, const LimitSpec& p) {
  const bool three =
      p.kind == Kind::kTokenBucket || p.kind == Kind::kGcra || p.kind == Kind::kCalendarWindow;
  w.map((name.empty() ? 0 : 1) + 5 + (three ? 3 : 2));
  if (!name.empty()) w.bulk("name"), w.bulk(name);
  w.bulk("kind");
  w.bulk(kind_name(p.kind));
  switch (p.kind) {
    case Kind::kTokenBucket:
      w.bulk("capacity"), w.integer(p.a), w.bulk("refill"), w.integer(p.b);
      w.bulk("period_ms"), w.integer(p.c / kNsPerMs);
      break;
    case Kind::kGcra:
      w.bulk("max_burst"), w.integer(p.a), w.bulk("count"), w.integer(p.b);
      w.bulk("period_ms"), w.integer(p.c / kNsPerMs);
      break;
    case Kind::kConcurrency:
      w.bulk("limit"), w.integer(p.a), w.bulk("ttl_ms"), w.integer(p.c / kNsPerMs);
      break;
    case Kind::kCalendarWindow:
      w.bulk("limit"), w.integer(p.a), w.bulk("period");
      w.bulk(calendar_unit_name(calendar_unit_of(p.b)));
      w.bulk("tz"), w.bulk(calendar_zone_name(calendar_zone_of(p.b)));
      break;
    default:
      w.bulk("limit"), w.integer(p.a), w.bulk("window_ms"), w.integer(p.c / kNsPerMs);
      break;
  }
  w.bulk("replication");
  w.bulk(p.sync ? "sync" : "async");
  w.bulk("on_unavailable");
  w.bulk(p.on_unavailable == FailMode::kOpen     ? "fail_open"
         : p.on_unavailable == FailMode::kClosed ? "fail_closed"
                                                 : "error");
  w.bulk("shadow");
  w.integer(p.shadow ? 1 : 0);
  w.bulk("slices");
  w.bulk(p.no_slices ? "off" : "on");
}

bool arity(CommandContext& s, Args& a, size_t min, size_t max) {
  if (a.size() >= min && a.size() <= max) return true;
  std::string sub(a[1]);
  for (char& c : sub) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  s.local().error(err::wrong_arity("fg.policy|" + sub));
  return false;
}

void reply_status(CommandContext& s, const Status& status) {
  if (status.ok()) {
    s.local().ok();
  } else {
    s.local().error(status.error());
  }
}

PolicyStore* store(CommandContext& s) {
  if (!s.svc().policy_store) s.local().error(err::kPoliciesReadOnly);
  return s.svc().policy_store;
}

void set_policy(CommandContext& s, Args& a) {
  if (!arity(s, a, 5, 10)) return;
  PolicyStore* st = store(s);
  if (!st) return;
  Result<LimitSpec> spec = parse_definition(a, 3);
  if (!spec.ok()) return s.local().error(spec.error());
  reply_status(s, st->set_policy(std::string(a[2]), spec.value()));
}

void override_key(CommandContext& s, Args& a) {
  if (!arity(s, a, 4, 10)) return;
  PolicyStore* st = store(s);
  if (!st) return;
  if (a[2].size() > kMaxKeyLen) return s.local().error(err::kKeyTooLong);
  PolicyOverride o;
  if (a.size() == 4 && kind_from_name(a[3]) == Kind::kNone) {
    o.policy = std::string(a[3]);
  } else {
    Result<LimitSpec> spec = parse_definition(a, 3);
    if (!spec.ok()) return s.local().error(spec.error());
    o.spec = spec.value();
  }
  reply_status(s, st->set_override(std::string(a[2]), o));
}

// Whether the caller may see `key` named: one of its key patterns covers it (with any
// access). Overrides name keys, and which plan a key is on is a tenant's business.
bool may_see(CommandContext& s, std::string_view key) {
  const AclUser* u = s.acl().user();
  return !u || u->unrestricted() || u->key_allowed(key, false, false);
}

void which(CommandContext& s, Args& a) {
  if (!arity(s, a, 3, 4)) return;
  if (!may_see(s, a[2])) {  // (refused as any command on a key the user may not touch)
    s.svc().acl->refused(
        AclDenied::kKey, "toplevel", a[2], s.acl().name(),
        s.svc().clients->describe(s.client(), s.svc().clock->now_ns() / 1'000'000));
    return s.local().error(err::kNoPermKey);
  }
  auto set = s.svc().policies->snapshot();
  PolicySet::Source source;
  const std::string_view named = a.size() == 4 ? a[3] : std::string_view();
  Result<const LimitSpec*> spec = set->lookup(a[2], named, &source);
  RespWriter w = s.local();
  if (!spec.ok()) return w.error(spec.error());
  std::string from = "named";
  std::string name(named);
  if (source == PolicySet::Source::kOverride) {
    from = "override";
    name = set->overrides.find(a[2])->second.policy;
  } else if (source == PolicySet::Source::kPattern) {
    for (const auto& p : set->patterns) {
      if (glob_match(p.glob, a[2], false)) {
        from = "pattern " + p.glob;
        name = p.policy;
        break;
      }
    }
  }
  w.array(2);
  w.bulk(from);
  write_policy(w, name, **spec);
}
}  // namespace

// FG.POLICY SET|GET|DEL|LIST|MAP|UNMAP|PATTERNS|OVERRIDE|UNOVERRIDE|OVERRIDES|WHICH
void cmd_fg_policy(CommandContext& s, Args& a) {
  const std::string_view sub = a[1];
  auto set = s.svc().policies->snapshot();
  if (iequals(sub, "list")) {
    if (!arity(s, a, 2, 2)) return;
    RespWriter w = s.local();
    w.array(set->policies.size());
    for (const auto& [name, spec] : set->policies) write_policy(w, name, spec);
  } else if (iequals(sub, "get")) {
    if (!arity(s, a, 3, 3)) return;
    auto it = set->policies.find(a[2]);
    RespWriter w = s.local();
    if (it == set->policies.end()) return w.null();
    write_policy(w, it->first, it->second);
  } else if (iequals(sub, "set")) {
    set_policy(s, a);
  } else if (iequals(sub, "del")) {
    if (!arity(s, a, 3, 3)) return;
    PolicyStore* st = store(s);
    if (!st) return;
    Result<bool> gone = st->del_policy(std::string(a[2]));
    if (!gone.ok()) return s.local().error(gone.error());
    s.local().integer(gone.value() ? 1 : 0);
  } else if (iequals(sub, "map")) {
    if (!arity(s, a, 4, 4)) return;
    if (PolicyStore* st = store(s))
      reply_status(s, st->map_pattern(std::string(a[2]), std::string(a[3])));
  } else if (iequals(sub, "unmap")) {
    if (!arity(s, a, 3, 3)) return;
    if (PolicyStore* st = store(s)) s.local().integer(st->unmap_pattern(std::string(a[2])) ? 1 : 0);
  } else if (iequals(sub, "patterns")) {
    if (!arity(s, a, 2, 2)) return;
    RespWriter w = s.local();
    w.array(set->patterns.size());
    for (const auto& p : set->patterns) {
      w.array(2);
      w.bulk(p.glob);
      w.bulk(p.policy);
    }
  } else if (iequals(sub, "override")) {
    override_key(s, a);
  } else if (iequals(sub, "unoverride")) {
    if (!arity(s, a, 3, 3)) return;
    if (PolicyStore* st = store(s)) s.local().integer(st->del_override(std::string(a[2])) ? 1 : 0);
  } else if (iequals(sub, "overrides")) {
    if (!arity(s, a, 2, 2)) return;
    RespWriter w = s.local();
    size_t shown = 0;
    for (const auto& [key, o] : set->overrides) shown += may_see(s, key) ? 1 : 0;
    w.array(shown);
    for (const auto& [key, o] : set->overrides) {
      if (!may_see(s, key)) continue;
      w.array(2);
      w.bulk(key);
      w.bulk(o.policy.empty() ? policy_definition(o.spec) : o.policy);
    }
  } else if (iequals(sub, "which")) {
    which(s, a);
  } else {
    s.local().error(err::unknown_subcommand(sub, kHelp));
  }
}

}  // namespace fg

namespace fg {

// FG.RLS CONFIG: the gateway door's rules in force, where they came from, and the last
// refused reload; FG.RLS RELOAD: reads the files again now (a SIGHUP, or a change to them,
// does the same).
void cmd_fg_rls(CommandContext& s, Args& a) {
  const std::string_view sub = a[1];
  RlsRules* rules = s.svc().rls;
  const bool config = iequals(sub, "config");
  if (!config && !iequals(sub, "reload")) {
    return s.local().error("ERR unknown subcommand '" + std::string(sub) +
                           "'. Try FG.RLS CONFIG or FG.RLS RELOAD.");
  }
  if (!arity(s, a, 2, 2)) return;
  if (!rules || rules->path().empty()) return s.local().error(err::kNoRlsConfig);
  if (!config) {
    const Status st = rules->reload();
    return st.ok() ? s.local().ok() : s.local().error("ERR " + st.error());
  }
  auto cfg = rules->get();
  const std::vector<std::string> lines = cfg->describe();
  RespWriter w = s.local();
  w.array(10);
  w.bulk("path");
  w.bulk(rules->path());
  w.bulk("files");
  w.array(cfg->files.size());
  for (const std::string& f : cfg->files) w.bulk(f);
  w.bulk("loaded-at-ms");
  w.integer(rules->loaded_at_ms());
  w.bulk("last-error");
  w.bulk(rules->last_error());
  w.bulk("rules");
  w.array(lines.size());
  for (const std::string& l : lines) w.bulk(l);
}

}  // namespace fg
