// Users and what each may run, in Redis ACL's vocabulary: rules such as
// "on #<sha256> ~tenant-a:* +@limiter -@dangerous". The catalog names every command and
// subcommand with its categories and key positions (api/commands fills it from the command
// table); an AclUser is one user's rules, immutable once published; the AclBook holds the
// node's users and swaps the whole set on a reload. Both doors and the script engine ask
// the same AclUser::check.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "accounts.hpp"
#include "clock.hpp"
#include "result.hpp"
#include "script_host.hpp"

namespace fg {

// Redis's categories, in its order, then Floodgate's own.
enum AclCategory : uint32_t {
  kAclKeyspace = 1u << 0,
  kAclRead = 1u << 1,
  kAclWrite = 1u << 2,
  kAclSet = 1u << 3,
  kAclSortedSet = 1u << 4,
  kAclList = 1u << 5,
  kAclHash = 1u << 6,
  kAclString = 1u << 7,
  kAclBitmap = 1u << 8,
  kAclHyperLogLog = 1u << 9,
  kAclGeo = 1u << 10,
  kAclStream = 1u << 11,
  kAclPubSub = 1u << 12,
  kAclAdmin = 1u << 13,
  kAclFast = 1u << 14,
  kAclSlow = 1u << 15,
  kAclBlocking = 1u << 16,
  kAclDangerous = 1u << 17,
  kAclConnection = 1u << 18,
  kAclTransaction = 1u << 19,
  kAclScripting = 1u << 20,
  kAclLimiter = 1u << 21,  // taking permits and leases: what an application needs
};

// Every category's name (without '@') and bit, in ACL CAT's order.
const std::vector<std::pair<const char*, uint32_t>>& acl_categories();
// The bits of "read slow dangerous" (names separated by spaces); throws on an unknown name.
uint32_t acl_category_bits(std::string_view names);

// One command or subcommand as rules name it: "get", "config|get".
struct AclCommand {
  std::string name;  // lower case; a subcommand's is "parent|sub"
  int parent = -1;   // a subcommand's container
  uint32_t categories = 0;
  // What it does with its keys (Redis's key-spec flags): reads them (needs %R~), writes
  // them (needs %W~); neither: the key only has to match one of the user's patterns.
  bool reads = false;
  bool writes = false;
  bool reads_with_get = false;  // SET: reads its key too when given GET
  // Where its keys are, as COMMAND reports them: first (0: none), last (-1: the last
  // argument), step; numkeys_at > 0: a count at that position, the keys right after it
  // (EVAL's way).
  int first_key = 0;
  int last_key = 0;
  int key_step = 1;
  int numkeys_at = 0;
  bool after_streams = false;  // XREAD's: the first half of the words after STREAMS
  // Its channels (Redis's CMD_CHANNEL_* args), checked against the user's & patterns:
  // PUBLISH's one (first argument), SUBSCRIBE's every argument, or PSUBSCRIBE's patterns
  // (matched literally against the user's).
  enum class Channels : uint8_t {
    kNone,
    kPublish,
    kSubscribe,
    kPatterns
  } channels = Channels::kNone;
  std::vector<int> subs;  // a container's subcommands
};

class AclCatalog {
 public:
  explicit AclCatalog(std::vector<AclCommand> commands);
  size_t size() const { return commands_.size(); }
  const AclCommand& at(int i) const { return commands_[static_cast<size_t>(i)]; }
  int find(std::string_view full_name) const;  // case-insensitive; -1 when unknown
  // What a command line runs as: a container's subcommand (the container itself when the
  // subcommand is unknown: the command answers that), or the command. -1: unknown command.
  int entry_for(int command, const std::vector<std::string_view>& words) const;
  int lookup(const std::vector<std::string_view>& words) const;

 private:
  std::vector<AclCommand> commands_;
  std::map<std::string, int, std::less<>> by_name_;
};

enum class AclDenied : uint8_t { kNone, kCommand, kKey, kAuth, kChannel };

// One line of ACL LOG: refusals of one kind, of one object, to one user, in one context,
// grouped while they come less than a minute apart (Redis's rule).
struct AclLogEntry {
  int64_t count = 1;
  AclDenied reason = AclDenied::kCommand;
  std::string context;  // toplevel, multi, lua
  std::string object;   // the command, the key, or (auth) what was sent: AUTH, HELLO
  std::string username;
  std::string client_info;  // the client's CLIENT LIST line, when it was refused
  int64_t time_ms = 0;      // the last one
};

class AclBook;

// The -NOPERM error for a refused command (entry) or key, in Redis's words.
std::string acl_denied_error(const AclCatalog& catalog, AclDenied d, int entry);

class AclUser : public ScriptCaller {
 public:
  // A new user as ACL SETUSER creates one: off, no password, no commands, no keys.
  AclUser(const AclCatalog& catalog, std::string name);

  // Applies one rule (Redis's ACL SETUSER words); why not, in Redis's words.
  Status apply(std::string_view rule);

  const std::string& name() const { return name_; }
  // Whose keys its requests make (accounts.hpp): one per user name, for the process's life.
  uint16_t account() const { return account_; }
  void set_account(uint16_t a) { account_ = a; }
  bool enabled() const { return enabled_; }
  bool nopass() const { return nopass_; }
  // Whether `pass` is one of its passwords (or it has nopass); constant time per password.
  bool password_matches(std::string_view pass) const;
  // Every command on every key: checks are skipped for it (the default user, operators).
  bool unrestricted() const { return unrestricted_; }
  // Whether it may run `words` as catalog entry `entry`; *pos: the refused key's index.
  AclDenied check(int entry, const std::vector<std::string_view>& words, size_t* pos) const;
  // Whether one of its patterns gives `key` with the access asked for.
  bool key_allowed(std::string_view key, bool read, bool write) const;
  // Whether it may use `channel` (a pattern subscription's pattern, when `is_pattern`: the
  // user needs that very pattern, or &*).
  bool channel_allowed(std::string_view channel, bool is_pattern) const;
  // ACL LIST's rules for it: flags, password hashes, keys, channels, commands.
  std::string describe() const;
  // ACL GETUSER's parts.
  std::vector<std::string> flags() const;
  const std::vector<std::string>& password_hashes() const { return passwords_; }
  std::string describe_keys() const;
  std::string describe_channels() const;
  std::string describe_commands() const;

  // ScriptCaller: what redis.call may run (a refusal goes to the book's ACL LOG).
  const char* refuse(const std::vector<std::string_view>& words) const override;
  bool may_write(std::string_view key) const override { return key_allowed(key, false, true); }
  std::string_view caller_name() const override { return name_; }
  void set_book(const AclBook* book) { book_ = book; }

 private:
  void set_entry(int entry, bool on);
  void set_category(uint32_t cat, bool on);
  bool allowed(int entry) const {
    return bits_[static_cast<size_t>(entry) >> 6] >> (entry & 63) & 1;
  }
  void settle();  // recomputes unrestricted_

  struct KeyPattern {
    std::string pattern;
    bool read;
    bool write;
  };
  const AclCatalog* catalog_;
  const AclBook* book_ = nullptr;  // where its scripts' refusals are logged
  std::string name_;
  uint16_t account_ = 0;
  bool enabled_ = false;
  bool nopass_ = false;
  std::vector<std::string> passwords_;      // SHA-256, lower-case hex
  std::vector<uint64_t> bits_;              // a bit per catalog entry
  bool all_commands_ = false;               // +@all last set the whole table: future commands too
  std::vector<std::string> command_rules_;  // the rules after the last +@all / -@all
  std::map<int, std::vector<std::string>> first_args_;  // "+select|0": entry -> first args
  bool all_keys_ = false;
  std::vector<KeyPattern> keys_;
  bool all_channels_ = false;
  std::vector<std::string> channels_;
  bool unrestricted_ = false;
};

// The SHA-256 of a password, as ACL rules write it (#<64 lower-case hex digits>).
std::string acl_password_hash(std::string_view password);

// The node's users. Readers take a snapshot (find) and notice changes by version().
class AclBook {
 public:
  // `clock`: the node's, for ACL LOG's times.
  AclBook(const AclCatalog& catalog, const Clock& clock);
  const Clock& clock() const { return clock_; }
  const AclCatalog& catalog() const { return catalog_; }

  // Replaces every user with those of `lines`, each "user <name> <rules...>" (an ACL file's
  // line; blank lines and #-comments skipped); the default user, when not among them, is
  // Redis's (every command, every key) with `requirepass` as its password (none: nopass).
  // Nothing changes on an error: "<where>:<line>: <why>".
  Status load(const std::vector<std::string>& lines, const std::string& requirepass,
              const std::string& where);
  // ACL SETUSER: creates or changes one user (node-local); or Redis's error text.
  Status set_user(std::string_view name, const std::vector<std::string_view>& rules);
  // ACL DELUSER: how many of `names` existed and are gone; or the error.
  Result<int64_t> del_users(const std::vector<std::string_view>& names);

  std::shared_ptr<const AclUser> find(std::string_view name) const;
  std::vector<std::shared_ptr<const AclUser>> users() const;  // by name
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // Called (on the changing thread, no lock held) after every change of the users: the node
  // wakes its connections, which close if their user went or can no longer hear what it
  // listens to (AclSession, the doors).
  void set_on_change(std::function<void()> f) { on_change_ = std::move(f); }

  // Refusals, for INFO (acl_access_denied_*) and /metrics.
  mutable std::atomic<uint64_t> denied_auth{0};
  mutable std::atomic<uint64_t> denied_cmd{0};
  mutable std::atomic<uint64_t> denied_key{0};
  mutable std::atomic<uint64_t> denied_channel{0};

  // Counts a refusal and keeps it for ACL LOG (the newest 128 kinds, as Redis keeps).
  void refused(AclDenied reason, std::string_view context, std::string_view object,
               std::string_view username, std::string client_info) const;
  std::vector<AclLogEntry> log(size_t count) const;  // newest first
  void reset_log() const;

 private:
  mutable std::mutex log_mu_;
  mutable std::deque<AclLogEntry> log_;
  const AclCatalog& catalog_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const AclUser>, std::less<>> users_;
  std::atomic<uint64_t> version_{1};
  std::function<void()> on_change_;
  void changed();  // a new version, and on_change_
  // Each user name's account, for the process's life (a user deleted and made again keeps
  // its keys' account).
  uint16_t account_for(std::string_view name);
  std::mutex account_mu_;
  std::map<std::string, uint16_t, std::less<>> accounts_;
  size_t next_account_ = 1;
};

// Who a connection is: its user once authenticated (null before), refreshed when the
// book changes. The doors keep one each.
class AclSession {
 public:
  // A new (or RESET) connection is the default user when that user needs no password, else
  // no one until it authenticates.
  void start(const AclBook* book);
  // After a reload or ACL SETUSER/DELUSER: the same user's new rules; false when the user
  // is gone or disabled (the connection is closed, as Redis does).
  bool refresh();
  // Whether the book changed since this session last looked (refresh() would do work).
  bool stale() const { return book_ && book_->version() != version_; }
  // AUTH / HELLO AUTH; false on a wrong pair or a disabled user (the caller logs it).
  bool authenticate(std::string_view user, std::string_view pass);
  // The same in two steps: the user a pair names (null: wrong, or disabled), and signing
  // in as it (when the caller has found room for it).
  std::shared_ptr<const AclUser> verify(std::string_view user, std::string_view pass) const;
  void adopt(std::shared_ptr<const AclUser> u);
  bool authenticated() const { return user_ != nullptr; }
  const AclUser* user() const { return user_.get(); }
  const std::string& name() const;  // "default" before AUTH
  // Its user's account (accounts.hpp); no one's before AUTH.
  uint16_t account() const { return user_ ? user_->account() : Accounts::kNone; }
  const AclBook* book() const { return book_; }

 private:
  const AclBook* book_ = nullptr;
  std::shared_ptr<const AclUser> user_;
  uint64_t version_ = 0;
};

}  // namespace fg
