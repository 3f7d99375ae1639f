// Users, rules and checks (acl.hpp). Rule words and error texts follow Redis 7.0's
// ACL SETUSER; selectors and pub/sub channels beyond '&' patterns are not part of it.
#include "acl.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "errors.hpp"
#include "words.hpp"

namespace fg {

namespace {

constexpr char kSyntax[] = "Syntax error";
constexpr char kUnknownName[] = "Unknown command or category name in ACL";
constexpr char kAfterAllKeys[] =
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not "
    "have any effect. Try 'resetkeys' to start with an empty list of patterns";
constexpr char kAfterAllChannels[] =
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does "
    "not have any effect. Try 'resetchannels' to start with an empty list of channels";
constexpr char kNoSuchPassword[] =
    "The password you are trying to remove from the user does not exist";
constexpr char kBadHash[] =
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal "
    "characters";
constexpr char kFirstArg[] = "Allowing first-arg of a subcommand is not supported";

bool valid_hash(std::string_view h) {
  if (h.size() != 64) return false;
  return std::all_of(h.begin(), h.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool has_space(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\0'; });
}

}  // namespace

const std::vector<std::pair<const char*, uint32_t>>& acl_categories() {
  static const std::vector<std::pair<const char*, uint32_t>> cats = {
      {"keyspace", kAclKeyspace},
      {"read", kAclRead},
      {"write", kAclWrite},
      {"set", kAclSet},
      {"sortedset", kAclSortedSet},
      {"list", kAclList},
      {"hash", kAclHash},
      {"string", kAclString},
      {"bitmap", kAclBitmap},
      {"hyperloglog", kAclHyperLogLog},
      {"geo", kAclGeo},
      {"stream", kAclStream},
      {"pubsub", kAclPubSub},
      {"admin", kAclAdmin},
      {"fast", kAclFast},
      {"slow", kAclSlow},
      {"blocking", kAclBlocking},
      {"dangerous", kAclDangerous},
      {"connection", kAclConnection},
      {"transaction", kAclTransaction},
      {"scripting", kAclScripting},
      {"limiter", kAclLimiter},
  };
  return cats;
}

namespace {
uint32_t category_bit(std::string_view name) {
  for (const auto& [n, bit] : acl_categories())
    if (iequals(name, n)) return bit;
  return 0;
}
}  // namespace

uint32_t acl_category_bits(std::string_view names) {
  uint32_t bits = 0;
  std::istringstream in{std::string(names)};
  std::string w;
  while (in >> w) {
    const uint32_t b = category_bit(w);
    if (!b) throw std::invalid_argument("unknown ACL category '" + w + "'");
    bits |= b;
  }
  return bits;
}

// --- the catalog ---------------------------------------------------------------------

AclCatalog::AclCatalog(std::vector<AclCommand> commands) : commands_(std::move(commands)) {
  for (size_t i = 0; i < commands_.size(); ++i) {
    by_name_.emplace(to_lower(commands_[i].name), static_cast<int>(i));
    const int parent = commands_[i].parent;
    if (parent >= 0) commands_[static_cast<size_t>(parent)].subs.push_back(static_cast<int>(i));
  }
}

int AclCatalog::find(std::string_view full_name) const {
  const auto it = by_name_.find(to_lower(full_name));
  return it == by_name_.end() ? -1 : it->second;
}

int AclCatalog::entry_for(int command, const std::vector<std::string_view>& words) const {
  if (command < 0) return -1;
  const AclCommand& c = at(command);
  if (c.subs.empty() || words.size() < 2) return command;
  const std::string_view parent = c.name;
  for (int s : c.subs) {
    const std::string_view sub = std::string_view(at(s).name).substr(parent.size() + 1);
    if (iequals(sub, words[1])) return s;
  }
  return command;
}

int AclCatalog::lookup(const std::vector<std::string_view>& words) const {
  if (words.empty()) return -1;
  return entry_for(find(words[0]), words);
}

// --- one user ------------------------------------------------------------------------

AclUser::AclUser(const AclCatalog& catalog, std::string name)
    : catalog_(&catalog), name_(std::move(name)), bits_((catalog.size() + 63) / 64, 0) {}

std::string acl_password_hash(std::string_view password) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(password.data()), password.size(), md);
  return to_hex(std::string_view(reinterpret_cast<const char*>(md), sizeof md));
}

void AclUser::set_entry(int entry, bool on) {
  first_args_.erase(entry);
  const auto i = static_cast<size_t>(entry);
  if (on) {
    bits_[i >> 6] |= uint64_t{1} << (i & 63);
  } else {
    bits_[i >> 6] &= ~(uint64_t{1} << (i & 63));
  }
  // A container's rule covers its subcommands.
  for (int s : catalog_->at(entry).subs) set_entry(s, on);
}

void AclUser::set_category(uint32_t cat, bool on) {
  for (size_t i = 0; i < catalog_->size(); ++i)
    if (catalog_->at(static_cast<int>(i)).categories & cat) set_entry(static_cast<int>(i), on);
}

Status AclUser::apply(std::string_view rule) {
  const std::string r = to_lower(rule);
  if (r == "on") {
    enabled_ = true;
  } else if (r == "off") {
    enabled_ = false;
  } else if (r == "nopass") {
    nopass_ = true;
    passwords_.clear();
  } else if (r == "resetpass") {
    nopass_ = false;
    passwords_.clear();
  } else if (r == "skip-sanitize-payload" || r == "sanitize-payload" || r == "clearselectors") {
    // (payloads are never trusted here; there are no selectors to clear)
  } else if (!rule.empty() &&
             (rule[0] == '>' || rule[0] == '<' || rule[0] == '#' || rule[0] == '!')) {
    const bool remove = rule[0] == '<' || rule[0] == '!';
    std::string hash;
    if (rule[0] == '>' || rule[0] == '<') {
      hash = acl_password_hash(rule.substr(1));
    } else {
      hash = std::string(rule.substr(1));
      if (!valid_hash(hash)) return Error{kBadHash};
    }
    const auto it = std::find(passwords_.begin(), passwords_.end(), hash);
    if (remove) {
      if (it == passwords_.end()) return Error{kNoSuchPassword};
      passwords_.erase(it);
    } else {
      if (it == passwords_.end()) passwords_.push_back(hash);
      nopass_ = false;
    }
  } else if (r == "allkeys" || rule == "~*") {
    all_keys_ = true;
    keys_.clear();
  } else if (r == "resetkeys") {
    all_keys_ = false;
    keys_.clear();
  } else if (!rule.empty() && (rule[0] == '~' || rule[0] == '%')) {
    bool read = true, write = true;
    std::string_view pat = rule.substr(1);
    if (rule[0] == '%') {
      read = write = false;
      size_t i = 1;
      for (; i < rule.size() && rule[i] != '~'; ++i) {
        if (rule[i] == 'R' || rule[i] == 'r') {
          read = true;
        } else if (rule[i] == 'W' || rule[i] == 'w') {
          write = true;
        } else {
          return Error{kSyntax};
        }
      }
      if (i == rule.size() || (!read && !write)) return Error{kSyntax};
      pat = rule.substr(i + 1);
    }
    if (all_keys_) return Error{kAfterAllKeys};
    if (pat == "*" && read && write) {
      all_keys_ = true;
      keys_.clear();
    } else {
      keys_.push_back({std::string(pat), read, write});
    }
  } else if (r == "allchannels" || rule == "&*") {
    all_channels_ = true;
    channels_.clear();
  } else if (r == "resetchannels") {
    all_channels_ = false;
    channels_.clear();
  } else if (!rule.empty() && rule[0] == '&') {
    if (all_channels_) return Error{kAfterAllChannels};
    channels_.emplace_back(rule.substr(1));
  } else if (r == "allcommands" || r == "+@all") {
    std::fill(bits_.begin(), bits_.end(), ~uint64_t{0});
    all_commands_ = true;
    command_rules_.clear();
    first_args_.clear();
  } else if (r == "nocommands" || r == "-@all") {
    std::fill(bits_.begin(), bits_.end(), 0);
    all_commands_ = false;
    command_rules_.clear();
    first_args_.clear();
  } else if (r.size() > 2 && (r[0] == '+' || r[0] == '-') && r[1] == '@') {
    const uint32_t cat = category_bit(std::string_view(r).substr(2));
    if (!cat) return Error{kUnknownName};
    set_category(cat, r[0] == '+');
    if (r[0] == '-') all_commands_ = false;
    command_rules_.push_back(r);
  } else if (r.size() > 1 && (r[0] == '+' || r[0] == '-')) {
    const size_t bar = r.rfind('|');
    if (r[0] == '+' && bar != std::string::npos) {
      const int cmd = catalog_->find(std::string_view(r).substr(1, bar - 1));
      if (cmd < 0) return Error{kUnknownName};
      if (catalog_->at(cmd).parent >= 0) return Error{kFirstArg};
      if (bar + 1 == r.size()) return Error{kSyntax};
      if (catalog_->at(cmd).subs.empty()) {
        // "+select|0": this first argument only, of a command not allowed whole (Redis
        // still takes these rules, and warns that they may go).
        auto& args = first_args_[cmd];
        const std::string arg(rule.substr(bar + 1));
        if (std::none_of(args.begin(), args.end(),
                         [&](const std::string& a) { return iequals(a, arg); }))
          args.push_back(arg);
        command_rules_.push_back(r);
        settle();
        return {};
      }
    }
    const int entry = catalog_->find(std::string_view(r).substr(1));
    if (entry < 0) return Error{kUnknownName};
    set_entry(entry, r[0] == '+');
    if (r[0] == '-') all_commands_ = false;
    command_rules_.push_back(r);
  } else if (r == "reset") {
    // (rules of Redis's own words: none of them can fail)
    for (const char* w : {"resetpass", "resetkeys", "resetchannels", "off", "-@all"})
      static_cast<void>(apply(w));
  } else if (!rule.empty() && rule[0] == '(') {
    return Error{"Selectors are not supported by this server"};
  } else {
    return Error{kSyntax};
  }
  settle();
  return {};
}

void AclUser::settle() {
  bool all = true;
  for (size_t i = 0; i < catalog_->size() && all; ++i) all = allowed(static_cast<int>(i));
  unrestricted_ = all && all_keys_ && all_channels_;
}

bool AclUser::password_matches(std::string_view pass) const {
  if (nopass_) return true;
  const std::string h = acl_password_hash(pass);
  bool match = false;
  for (const std::string& p : passwords_) match |= CRYPTO_memcmp(p.data(), h.data(), 64) == 0;
  return match;
}

bool AclUser::key_allowed(std::string_view key, bool read, bool write) const {
  if (all_keys_) return true;
  for (const KeyPattern& k : keys_) {
    if ((!read || k.read) && (!write || k.write) && glob_match(k.pattern, key, false)) return true;
  }
  return false;
}

AclDenied AclUser::check(int entry, const std::vector<std::string_view>& words, size_t* pos) const {
  if (unrestricted_) return AclDenied::kNone;
  if (entry < 0) return AclDenied::kCommand;
  if (!allowed(entry)) {
    const auto fa = first_args_.find(entry);
    if (fa == first_args_.end() || words.size() < 2 ||
        std::none_of(fa->second.begin(), fa->second.end(),
                     [&](const std::string& a) { return iequals(a, words[1]); })) {
      return AclDenied::kCommand;
    }
  }
  const AclCommand* c = &catalog_->at(entry);
  const size_t n = words.size();
  if (c->channels != AclCommand::Channels::kNone && !all_channels_) {
    const bool patterns = c->channels == AclCommand::Channels::kPatterns;
    const size_t last = c->channels == AclCommand::Channels::kPublish ? std::min<size_t>(n, 2) : n;
    for (size_t j = 1; j < last; ++j) {
      if (!channel_allowed(words[j], patterns)) {
        if (pos) *pos = j;
        return AclDenied::kChannel;
      }
    }
  }
  if (all_keys_) return AclDenied::kNone;
  // A subcommand's keys are its container's (OBJECT ENCODING key, MEMORY USAGE key).
  if (c->parent >= 0) c = &catalog_->at(c->parent);
  bool reads = c->reads;
  if (c->reads_with_get) {
    for (size_t j = 3; j < n && !reads; ++j) reads = iequals(words[j], "get");
  }
  auto keys_allowed = [&](size_t first, size_t last, size_t step) {
    for (size_t j = first; j <= last && j < n; j += step) {
      if (!key_allowed(words[j], reads, c->writes)) {
        if (pos) *pos = j;
        return false;
      }
    }
    return true;
  };
  if (c->after_streams) {
    const auto [first, end] = keys_after_streams(words);
    if (first < end && !keys_allowed(first, end - 1, 1)) return AclDenied::kKey;
  }
  // Fixed keys (ZUNIONSTORE's destination too), then counted ones (EVAL's, ZUNIONSTORE's).
  if (c->first_key > 0 &&
      !keys_allowed(static_cast<size_t>(c->first_key),
                    c->last_key < 0 ? n + c->last_key : static_cast<size_t>(c->last_key),
                    static_cast<size_t>(std::max(1, c->key_step)))) {
    return AclDenied::kKey;
  }
  if (c->numkeys_at > 0) {
    const auto at = static_cast<size_t>(c->numkeys_at);
    int64_t k = 0;
    if (at >= n || !parse_int(words[at], k) || k <= 0) return AclDenied::kNone;
    if (!keys_allowed(at + 1, std::min(n - 1, at + static_cast<size_t>(k)), 1)) {
      return AclDenied::kKey;
    }
  }
  return AclDenied::kNone;
}

bool AclUser::channel_allowed(std::string_view channel, bool is_pattern) const {
  if (all_channels_) return true;
  for (const std::string& p : channels_) {
    if (is_pattern ? p == channel : glob_match(p, channel, false)) return true;
  }
  return false;
}

std::string acl_denied_error(const AclCatalog& catalog, AclDenied d, int entry) {
  if (d == AclDenied::kKey) return err::kNoPermKey;
  if (d == AclDenied::kChannel) return err::kNoPermChannel;
  return err::no_perm_command(catalog.at(entry).name);
}

const char* AclUser::refuse(const std::vector<std::string_view>& words) const {
  const int entry = catalog_->lookup(words);
  size_t pos = 0;
  const AclDenied d = check(entry, words, &pos);
  if (d == AclDenied::kNone) return nullptr;
  if (book_) {  // (the shard running the script does not know its client)
    const std::string_view object = d == AclDenied::kKey || d == AclDenied::kChannel ? words[pos]
                                    : entry >= 0 ? std::string_view(catalog_->at(entry).name)
                                                 : words[0];
    book_->refused(d, "lua", object, name_, "");
  }
  if (d == AclDenied::kKey) {
    return "The user executing the script can't access at least one of the keys mentioned in "
           "the command arguments";
  }
  if (d == AclDenied::kChannel) {
    return "The user executing the script can't publish to the channel mentioned in the command";
  }
  return "The user executing the script can't run this command or subcommand";
}

std::vector<std::string> AclUser::flags() const {
  std::vector<std::string> f;
  f.emplace_back(enabled_ ? "on" : "off");
  if (nopass_) f.emplace_back("nopass");
  return f;
}

std::string AclUser::describe_keys() const {
  if (all_keys_) return "~*";
  std::string out;
  for (const KeyPattern& k : keys_) {
    if (!out.empty()) out += ' ';
    if (k.read && k.write) {
      out += "~";
    } else {
      out += k.read ? "%R~" : "%W~";
    }
    out += k.pattern;
  }
  return out;
}

std::string AclUser::describe_channels() const {
  if (all_channels_) return "&*";
  std::string out = "resetchannels";
  for (const std::string& c : channels_) out += " &" + c;
  return out;
}

std::string AclUser::describe_commands() const {
  std::string out = all_commands_ ? "+@all" : "-@all";
  for (const std::string& r : command_rules_) out += " " + r;
  return out;
}

std::string AclUser::describe() const {
  std::string out;
  for (const std::string& f : flags()) out += f + " ";
  for (const std::string& p : passwords_) out += "#" + p + " ";
  const std::string keys = describe_keys();
  if (!keys.empty()) out += keys + " ";
  out += describe_channels() + " ";
  out += describe_commands();
  return out;
}

// --- the book ------------------------------------------------------------------------

AclBook::AclBook(const AclCatalog& catalog, const Clock& clock) : catalog_(catalog), clock_(clock) {
  static_cast<void>(load({}, "", ""));  // (no lines: only the default user, which cannot fail)
}

namespace {
std::shared_ptr<AclUser> default_user(const AclCatalog& catalog, const std::string& requirepass) {
  auto u = std::make_shared<AclUser>(catalog, "default");
  // (rules that cannot fail: a password rule takes any bytes)
  for (const char* w : {"+@all", "~*", "&*", "on", "nopass"}) static_cast<void>(u->apply(w));
  if (!requirepass.empty()) {
    static_cast<void>(u->apply("resetpass"));
    static_cast<void>(u->apply(">" + requirepass));
  }
  return u;
}
}  // namespace

Status AclBook::load(const std::vector<std::string>& lines, const std::string& requirepass,
                     const std::string& where) {
  std::map<std::string, std::shared_ptr<const AclUser>, std::less<>> fresh;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::istringstream in(lines[i]);
    std::vector<std::string> w;
    for (std::string s; in >> s;) w.push_back(s);
    if (w.empty() || w[0][0] == '#') continue;
    const std::string at = where + ":" + std::to_string(i + 1) + ": ";
    if (w[0] != "user" || w.size() < 2) return Error{at + "line should start with user keyword"};
    if (fresh.count(w[1])) {
      return Error{at + "Duplicate user '" + w[1] +
                   "' found. A user can only be defined once in config files"};
    }
    auto u = std::make_shared<AclUser>(catalog_, w[1]);
    u->set_book(this);
    u->set_account(account_for(w[1]));
    for (size_t j = 2; j < w.size(); ++j) {
      if (const Status st = u->apply(w[j]); !st) {
        return Error{at + "Error in user declaration '" + w[j] + "': " + st.error()};
      }
    }
    fresh.emplace(w[1], std::move(u));
  }
  if (!fresh.count("default")) {
    auto u = default_user(catalog_, requirepass);
    u->set_book(this);
    u->set_account(account_for("default"));
    fresh.emplace("default", std::move(u));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    users_.swap(fresh);
  }
  changed();
  return {};
}

uint16_t AclBook::account_for(std::string_view name) {
  std::lock_guard<std::mutex> lock(account_mu_);
  const auto it = accounts_.find(name);
  if (it != accounts_.end()) return it->second;
  // (past the last id, users share no account: counted in the node's totals only)
  if (next_account_ >= Accounts::kMax) return Accounts::kNone;
  const auto id = static_cast<uint16_t>(next_account_++);
  accounts_.emplace(std::string(name), id);
  return id;
}

void AclBook::changed() {
  version_.fetch_add(1, std::memory_order_acq_rel);
  if (on_change_) on_change_();
}

Status AclBook::set_user(std::string_view name, const std::vector<std::string_view>& rules) {
  if (has_space(name)) return Error{err::kUsernameChars};
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = users_.find(name);
    // Every rule is tried on a copy; the user changes only when all of them apply.
    auto u = it != users_.end() ? std::make_shared<AclUser>(*it->second)
                                : std::make_shared<AclUser>(catalog_, std::string(name));
    u->set_book(this);
    if (it == users_.end()) u->set_account(account_for(name));
    for (std::string_view r : rules) {
      if (const Status st = u->apply(r); !st) return Error{err::acl_modifier(r, st.error())};
    }
    users_[std::string(name)] = std::move(u);
  }
  changed();
  return {};
}

Result<int64_t> AclBook::del_users(const std::vector<std::string_view>& names) {
  int64_t deleted = 0;
  for (std::string_view n : names)
    if (n == "default") return Error{err::kDefaultUserStays};
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::string_view n : names) {
      const auto it = users_.find(n);
      if (it == users_.end()) continue;
      users_.erase(it);
      ++deleted;
    }
  }
  if (deleted) changed();
  return deleted;
}

std::shared_ptr<const AclUser> AclBook::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = users_.find(name);
  return it == users_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const AclUser>> AclBook::users() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<const AclUser>> out;
  for (const auto& [name, u] : users_) out.push_back(u);
  return out;
}

void AclBook::refused(AclDenied reason, std::string_view context, std::string_view object,
                      std::string_view username, std::string client_info) const {
  (reason == AclDenied::kAuth      ? denied_auth
   : reason == AclDenied::kKey     ? denied_key
   : reason == AclDenied::kChannel ? denied_channel
                                   : denied_cmd)
      .fetch_add(1, std::memory_order_relaxed);
  const int64_t now_ms = clock_.now_ns() / 1'000'000;
  std::lock_guard<std::mutex> lock(log_mu_);
  // The same refusal within a minute of one of the last ten: counted there, moved first.
  for (size_t i = 0; i < log_.size() && i < 10; ++i) {
    AclLogEntry& e = log_[i];
    if (e.reason == reason && e.context == context && e.object == object &&
        e.username == username && std::abs(now_ms - e.time_ms) <= 60000) {
      AclLogEntry moved = std::move(e);
      log_.erase(log_.begin() + static_cast<std::ptrdiff_t>(i));
      ++moved.count;
      moved.time_ms = now_ms;
      moved.client_info = std::move(client_info);
      log_.push_front(std::move(moved));
      return;
    }
  }
  log_.push_front(AclLogEntry{1, reason, std::string(context), std::string(object),
                              std::string(username), std::move(client_info), now_ms});
  while (log_.size() > 128) log_.pop_back();
}

std::vector<AclLogEntry> AclBook::log(size_t count) const {
  std::lock_guard<std::mutex> lock(log_mu_);
  return {log_.begin(), log_.begin() + static_cast<std::ptrdiff_t>(std::min(count, log_.size()))};
}

void AclBook::reset_log() const {
  std::lock_guard<std::mutex> lock(log_mu_);
  log_.clear();
}

// --- a connection's user -------------------------------------------------------------

void AclSession::start(const AclBook* book) {
  book_ = book;
  version_ = book->version();
  auto u = book->find("default");
  user_ = u && u->enabled() && u->nopass() ? std::move(u) : nullptr;
}

bool AclSession::refresh() {
  const uint64_t v = book_->version();
  if (v == version_) return true;
  version_ = v;
  if (!user_) {  // not authenticated: the default user may have lost its password
    auto u = book_->find("default");
    if (u && u->enabled() && u->nopass()) user_ = std::move(u);
    return true;
  }
  auto u = book_->find(user_->name());
  if (!u || !u->enabled()) {
    user_.reset();
    return false;
  }
  user_ = std::move(u);
  return true;
}

bool AclSession::authenticate(std::string_view user, std::string_view pass) {
  auto u = verify(user, pass);
  if (!u) return false;
  adopt(std::move(u));
  return true;
}

std::shared_ptr<const AclUser> AclSession::verify(std::string_view user,
                                                  std::string_view pass) const {
  auto u = book_->find(user);
  if (!u || !u->enabled() || !u->password_matches(pass)) return nullptr;
  return u;
}

void AclSession::adopt(std::shared_ptr<const AclUser> u) {
  version_ = book_->version();
  user_ = std::move(u);
}

const std::string& AclSession::name() const {
  static const std::string kDefault = "default";
  return user_ ? user_->name() : kDefault;
}

}  // namespace fg
