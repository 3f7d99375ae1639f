// Users and their rights: the ACL catalog (every command's categories and keys, from the
// command table) and the ACL command.
#include <openssl/rand.h>

#include <stdexcept>
#include <string>

#include "acl.hpp"
#include "command_context.hpp"
#include "command_table.hpp"
#include "errors.hpp"
#include "handlers.hpp"
#include "words.hpp"

namespace fg {

namespace {

// The registry's rows, in its order (an entry's index is its command_id), then their
// subcommands. A row's categories are those its flags imply (Redis's rule) and its own.
AclCatalog build_catalog() {
  std::vector<AclCommand> out;
  for (const CommandSpec& spec : all_commands()) {
    AclCommand c;
    c.name = spec.name;
    c.categories = acl_category_bits(spec.acl);
    const bool scripting = (c.categories & acl_category_bits("scripting")) != 0;
    // (a container's @write is its subcommands': XGROUP's row writes for the shard's sake)
    if ((spec.flags & kWrite) && !scripting && spec.subcommands.empty())
      c.categories |= acl_category_bits("write");
    c.categories |= acl_category_bits((spec.flags & kFast) ? "fast" : "slow");
    c.first_key = spec.keys.first;
    c.last_key = spec.keys.last;
    c.key_step = spec.keys.step;
    c.numkeys_at = spec.keys.numkeys_at;
    c.after_streams = spec.keys.after_streams;
    c.reads = (spec.keys.access & kReads) != 0;
    c.writes = (spec.keys.access & kWrites) != 0;
    c.reads_with_get = spec.keys.reads_with_get;
    c.channels = spec.channels;
    out.push_back(std::move(c));
  }
  const int commands = static_cast<int>(out.size());
  for (int i = 0; i < commands; ++i) {
    for (const SubcommandSpec& sub : all_commands()[static_cast<size_t>(i)].subcommands) {
      AclCommand c;
      c.name = out[static_cast<size_t>(i)].name + "|" + sub.name;
      c.parent = i;
      c.categories = acl_category_bits(sub.acl);
      out.push_back(std::move(c));
    }
  }
  return AclCatalog(std::move(out));
}

void reply_denied(RespWriter& w, const AclBook& book, AclDenied d, int entry,
                  const std::vector<std::string_view>& a, size_t pos) {
  if (d == AclDenied::kCommand) {
    w.bulk("This user has no permissions to run the '" + book.catalog().at(entry).name +
           "' command");
  } else if (d == AclDenied::kChannel) {
    w.bulk("This user has no permissions to access the '" + std::string(a[pos]) + "' channel");
  } else {
    w.bulk("This user has no permissions to access the '" + std::string(a[pos]) + "' key");
  }
}

}  // namespace

const AclCatalog& acl_catalog() {
  static const AclCatalog catalog = build_catalog();
  return catalog;
}

bool CommandContext::acl_refuses(const CommandSpec& spec, const std::vector<std::string_view>& a,
                                 const char* context) {
  const AclUser* u = acl_.user();
  if (!u || u->unrestricted() || (spec.flags & kNoAuth)) return false;
  const AclCatalog& catalog = svc_.acl->catalog();
  const int entry = catalog.entry_for(command_id(&spec), a);
  size_t pos = 0;
  const AclDenied d = u->check(entry, a, &pos);
  if (d == AclDenied::kNone) return false;
  const bool arg = d == AclDenied::kKey || d == AclDenied::kChannel;
  svc_.acl->refused(d, context, arg ? a[pos] : catalog.at(entry).name, u->name(),
                    svc_.clients->describe(*client_, svc_.clock->now_ns() / 1'000'000));
  local().error(acl_denied_error(catalog, d, entry));
  return true;
}

// ACL WHOAMI | USERS | LIST | GETUSER | SETUSER | DELUSER | CAT | DRYRUN | LOAD | GENPASS | HELP
void cmd_acl(CommandContext& s, Args& a) {
  RespWriter w = s.local();
  AclBook& book = *s.svc().acl;
  const std::string_view sub = a[1];
  const size_t n = a.size();
  if (iequals(sub, "whoami") && n == 2) {
    w.bulk(s.acl().name());
  } else if ((iequals(sub, "users") || iequals(sub, "list")) && n == 2) {
    const auto users = book.users();
    w.array(users.size());
    for (const auto& u : users) {
      if (iequals(sub, "users")) {
        w.bulk(u->name());
      } else {
        w.bulk("user " + u->name() + " " + u->describe());
      }
    }
  } else if (iequals(sub, "getuser") && n == 3) {
    const auto u = book.find(a[2]);
    if (!u) return w.null();
    w.map(6);
    w.bulk("flags");
    const auto flags = u->flags();
    w.set(flags.size());
    for (const auto& f : flags) w.bulk(f);
    w.bulk("passwords");
    w.array(u->password_hashes().size());
    for (const auto& p : u->password_hashes()) w.bulk(p);
    w.bulk("commands");
    w.bulk(u->describe_commands());
    w.bulk("keys");
    w.bulk(u->describe_keys());
    w.bulk("channels");
    w.bulk(u->describe_channels() == "resetchannels" ? "" : u->describe_channels());
    w.bulk("selectors");
    w.array(0);
  } else if (iequals(sub, "setuser") && n >= 3) {
    const std::vector<std::string_view> rules(a.begin() + 3, a.end());
    if (const Status st = book.set_user(a[2], rules); !st) return w.error(st.error());
    w.ok();
  } else if (iequals(sub, "deluser") && n >= 3) {
    const Result<int64_t> deleted = book.del_users({a.begin() + 2, a.end()});
    if (!deleted) return w.error(deleted.error());
    w.integer(*deleted);
  } else if (iequals(sub, "cat") && (n == 2 || n == 3)) {
    if (n == 2) {
      w.array(acl_categories().size());
      for (const auto& [name, bit] : acl_categories()) w.bulk(name);
      return;
    }
    uint32_t bit = 0;
    for (const auto& [name, b] : acl_categories())
      if (iequals(a[2], name)) bit = b;
    if (!bit) return w.error(err::unknown_category(a[2]));
    const AclCatalog& cat = book.catalog();
    std::vector<const std::string*> names;
    for (size_t i = 0; i < cat.size(); ++i) {
      const AclCommand& c = cat.at(static_cast<int>(i));
      if (c.categories & bit) names.push_back(&c.name);
    }
    w.array(names.size());
    for (const std::string* nm : names) w.bulk(*nm);
  } else if (iequals(sub, "dryrun") && n >= 4) {
    const auto u = book.find(a[2]);
    if (!u) return w.error(err::unknown_user(a[2]));
    const std::vector<std::string_view> words(a.begin() + 3, a.end());
    const CommandSpec* spec = find_command(words[0]);
    if (!spec) return w.error(err::command_not_found(words[0]));
    const auto argc = static_cast<int>(words.size());
    if ((spec->arity > 0 && spec->arity != argc) || argc < -spec->arity) {
      const int entry = book.catalog().entry_for(command_id(spec), words);
      return w.error(err::wrong_arity(book.catalog().at(entry).name));
    }
    const int entry = book.catalog().entry_for(command_id(spec), words);
    size_t pos = 0;
    const AclDenied d = u->check(entry, words, &pos);
    if (d == AclDenied::kNone) return w.ok();
    reply_denied(w, book, d, entry, words, pos);
  } else if (iequals(sub, "load") && n == 2) {
    if (!s.svc().acl_load) {
      return w.error(err::kNoAclFile);
    }
    if (const Status st = s.svc().acl_load(); !st) return w.error("ERR " + st.error());
    w.ok();
  } else if (iequals(sub, "log") && (n == 2 || n == 3)) {
    int64_t count = 10;
    if (n == 3) {
      if (iequals(a[2], "reset")) {
        book.reset_log();
        return w.ok();
      }
      if (!parse_int(a[2], count)) return w.error(err::kNotInteger);
      if (count < 0) count = 0;
    }
    const auto entries = book.log(static_cast<size_t>(count));
    const int64_t now_ms = book.clock().now_ns() / 1'000'000;
    w.array(entries.size());
    for (const AclLogEntry& e : entries) {
      w.map(7);
      w.bulk("count");
      w.integer(e.count);
      w.bulk("reason");
      w.bulk(e.reason == AclDenied::kKey       ? "key"
             : e.reason == AclDenied::kAuth    ? "auth"
             : e.reason == AclDenied::kChannel ? "channel"
                                               : "command");
      w.bulk("context");
      w.bulk(e.context);
      w.bulk("object");
      w.bulk(e.object);
      w.bulk("username");
      w.bulk(e.username);
      w.bulk("age-seconds");
      w.dbl(static_cast<double>(now_ms - e.time_ms) / 1000);
      w.bulk("client-info");
      w.bulk(e.client_info);
    }
  } else if (iequals(sub, "genpass") && (n == 2 || n == 3)) {
    int64_t bits = 256;
    if (n == 3 && !parse_int(a[2], bits)) return w.error(err::kNotInteger);
    if (bits <= 0 || bits > 4096) {
      return w.error(err::kGenpassBits);
    }
    const auto chars = static_cast<size_t>((bits + 3) / 4);
    std::string raw((chars + 1) / 2, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(raw.size())) !=
        1) {
      return w.error(err::kNoRandomBytes);
    }
    w.bulk(to_hex(raw).substr(0, chars));
  } else if (iequals(sub, "help") && n == 2) {
    static constexpr const char* lines[] = {
        "ACL <subcommand> [<arg> ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users (this node only).",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the "
        "command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "LOAD",
        "    Reload users from the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes (this node only).",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Print this help."};
    w.help(lines);
  } else if (s.svc().acl->catalog().find("acl|" + std::string(sub)) >= 0) {
    w.error(err::wrong_arity("acl|" + to_lower(sub)));
  } else {
    w.error(err::unknown_subcommand(sub, "ACL HELP"));
  }
}

}  // namespace fg
