// Connection commands: PING ECHO HELLO AUTH QUIT SELECT CLIENT.
#include <string>

#include "command_context.hpp"
#include "errors.hpp"
#include "handlers.hpp"
#include "words.hpp"

namespace fg {

namespace {
// Checks a user's password (ACL users; requirepass is the default user's); writes the
// error reply on failure.
bool check_password(CommandContext& s, std::string_view command, std::string_view user,
                    std::string_view pass) {
  auto u = s.acl().verify(user, pass);
  if (!u) {
    s.svc().acl->refused(
        AclDenied::kAuth, "toplevel", command, user,
        s.svc().clients->describe(s.client(), s.svc().clock->now_ns() / 1'000'000));
    s.local().error(err::kWrongPass);
    return false;
  }
  // (a user at its share of the node's connections signs in nowhere new)
  if (!s.svc().clients->set_user(s.client(), u->name(), u->account())) {
    s.local().error(err::kUserMaxClients);
    return false;
  }
  s.acl().adopt(std::move(u));
  return true;
}

}  // namespace

void cmd_ping(CommandContext& s, Args& a) {
  if (a.size() > 2) {
    s.local().error(err::wrong_arity("ping"));
  } else if (s.in_subscribe_mode()) {  // (RESP2 subscribed: an array, as a message is)
    RespWriter w = s.local();
    w.array(2);
    w.bulk("pong");
    w.bulk(a.size() == 2 ? a[1] : std::string_view());
  } else if (a.size() == 2) {
    s.local().bulk(a[1]);
  } else {
    s.local().simple("PONG");
  }
}

void cmd_echo(CommandContext& s, Args& a) { s.local().bulk(a[1]); }

// HELLO [protover [AUTH username password] [SETNAME clientname]]
void cmd_hello(CommandContext& s, Args& a) {
  int proto = s.proto();
  size_t i = 1;
  if (a.size() > 1) {
    int64_t v;
    if (!parse_int(a[1], v)) {
      s.local().error(err::kProtoNotInteger);
      return;
    }
    if (v != 2 && v != 3) {
      s.local().error(err::kNoProto);
      return;
    }
    proto = static_cast<int>(v);
    i = 2;
  }
  std::string_view setname;
  bool has_setname = false;
  for (; i < a.size(); ++i) {
    if (iequals(a[i], "auth") && i + 2 < a.size()) {
      if (!check_password(s, a[0], a[i + 1], a[i + 2])) return;
      i += 2;
    } else if (iequals(a[i], "setname") && i + 1 < a.size()) {
      setname = a[++i];
      has_setname = true;
      if (!ClientRegistry::valid_name(setname)) {
        s.local().error(err::kClientName);
        return;
      }
    } else {
      s.local().error(err::hello_option(a[i]));
      return;
    }
  }
  if (!s.authenticated()) {
    s.local().error(err::kHelloNoAuth);
    return;
  }
  s.set_proto(proto);
  if (has_setname) s.svc().clients->set_name(s.client(), std::string(setname));
  RespWriter w = s.local();
  w.map(7);
  w.bulk("server");
  w.bulk("floodgate");
  w.bulk("version");
  w.bulk(s.svc().settings.version);
  w.bulk("proto");
  w.integer(proto);
  w.bulk("id");
  w.integer(static_cast<int64_t>(s.client().id));
  w.bulk("mode");
  w.bulk(s.svc().routing ? "cluster" : "standalone");
  w.bulk("role");
  w.bulk("master");
  w.bulk("modules");
  w.array(0);
}

void cmd_auth(CommandContext& s, Args& a) {
  if (a.size() > 3) {
    s.local().error(err::kSyntax);
    return;
  }
  const auto def = s.svc().acl->find("default");
  if (a.size() == 2 && def && def->nopass()) {
    s.local().error(err::kAuthNoPassword);
    return;
  }
  const std::string_view user = a.size() == 3 ? a[1] : std::string_view("default");
  if (check_password(s, a[0], user, a.back())) s.local().ok();
}

void cmd_quit(CommandContext& s, Args& a) {
  s.local().ok();
  s.request_close();
}

void cmd_reset(CommandContext& s, Args& a) { s.reset(); }

// FG.DEADLINE [ms | DEFAULT]: the deadline this connection's limiter commands have (ms since
// they reached the host; past it they are refused undecided), or, with no argument, the one
// in force (0: none).
void cmd_fg_deadline(CommandContext& s, Args& a) {
  std::atomic<int64_t>& mine = s.client().deadline_ms;
  if (a.size() == 1) {
    const int64_t d = mine.load(std::memory_order_relaxed);
    s.local().integer(d >= 0 ? d : s.svc().settings.request_deadline_ms.get());
    return;
  }
  if (a.size() > 2) return s.local().error(err::wrong_arity("fg.deadline"));
  int64_t ms = -1;
  if (!iequals(a[1], "default") && (!parse_int(a[1], ms) || ms < 0 || ms > kMaxDeadlineMs)) {
    return s.local().error(err::kNotInteger);
  }
  mine.store(ms, std::memory_order_relaxed);
  s.local().ok();
}

void cmd_select(CommandContext& s, Args& a) {
  int64_t db;
  if (!parse_int(a[1], db)) {
    s.local().error(err::kNotInteger);
  } else if (db != 0) {
    s.local().error(err::kDbIndex);
  } else {
    s.local().ok();
  }
}

namespace {

// CLIENT KILL addr (the old form: +OK, or an error if none was there; may kill itself), or
// CLIENT KILL filter value [filter value ...]: how many. Each chosen connection closes on
// its own thread; this one, after this reply.
void client_kill(CommandContext& s, Args& a, int64_t now_ms) {
  RespWriter w = s.local();
  ClientFilter f;
  const bool old_form = a.size() == 3;
  if (old_form) {
    f.addr = std::string(a[2]);
  } else {
    f.skip_id = s.client().id;  // (SKIPME YES unless said otherwise)
    for (size_t i = 2; i < a.size(); i += 2) {
      if (i + 1 >= a.size()) return w.error(err::kSyntax);
      const std::string_view opt = a[i], v = a[i + 1];
      if (iequals(opt, "id")) {
        int64_t id;
        if (!parse_int(v, id) || id < 1) return w.error(err::kClientIdPositive);
        f.id = static_cast<uint64_t>(id);
      } else if (iequals(opt, "maxage")) {
        if (!parse_int(v, f.min_age_s)) return w.error(err::kMaxageNotInteger);
        if (f.min_age_s <= 0) return w.error(err::kMaxagePositive);
      } else if (iequals(opt, "type")) {
        if (!ClientFilter::type_named(v, f.type)) return w.error(err::unknown_client_type(v));
      } else if (iequals(opt, "addr")) {
        f.addr = std::string(v);
      } else if (iequals(opt, "laddr")) {
        f.laddr = std::string(v);
      } else if (iequals(opt, "user")) {
        if (!s.svc().acl->find(v)) return w.error(err::no_such_user(v));
        f.user = std::string(v);
      } else if (iequals(opt, "door")) {
        if (!ClientFilter::door_named(v, f.door)) return w.error(err::unknown_door(v));
      } else if (iequals(opt, "skipme")) {
        if (iequals(v, "yes")) {
          f.skip_id = s.client().id;
        } else if (iequals(v, "no")) {
          f.skip_id = 0;
        } else {
          return w.error(err::kSyntax);
        }
      } else {
        return w.error(err::kSyntax);
      }
    }
  }
  const size_t killed = s.svc().clients->kill(f, now_ms);
  if (!old_form) return w.integer(static_cast<int64_t>(killed));
  if (killed == 0) return w.error(err::kNoSuchClient);
  w.ok();
}

}  // namespace

// CLIENT SETNAME | GETNAME | ID | SETINFO | LIST | INFO | KILL | NO-EVICT | NO-TOUCH |
// UNBLOCK | REPLY | HELP
void cmd_client(CommandContext& s, Args& a) {
  RespWriter w = s.local();
  auto& reg = *s.svc().clients;
  const std::string_view sub = a[1];
  const int64_t now_ms = s.svc().clock->now_ns() / 1'000'000;
  auto arity = [&](size_t n, const char* name) {
    if (a.size() == n) return true;
    w.error(err::wrong_arity(std::string("client|") + name));
    return false;
  };
  if (iequals(sub, "setname")) {
    if (!arity(3, "setname")) return;
    if (!ClientRegistry::valid_name(a[2])) return w.error(err::kClientName);
    reg.set_name(s.client(), std::string(a[2]));
    w.ok();
  } else if (iequals(sub, "getname")) {
    if (!arity(2, "getname")) return;
    std::string n = reg.name_of(s.client());
    if (n.empty()) return w.null();
    w.bulk(n);
  } else if (iequals(sub, "reply")) {
    if (!arity(3, "reply")) return;
    if (iequals(a[2], "on")) {
      s.set_reply_mode(CommandContext::ReplyMode::kOn);
      w.ok();
    } else if (iequals(a[2], "off")) {
      s.set_reply_mode(CommandContext::ReplyMode::kOff);
    } else if (iequals(a[2], "skip")) {  // (while OFF, nothing to skip)
      if (s.reply_mode() != CommandContext::ReplyMode::kOff)
        s.set_reply_mode(CommandContext::ReplyMode::kSkipNext);
    } else {
      w.error(err::kSyntax);
    }
  } else if (iequals(sub, "id")) {
    if (!arity(2, "id")) return;
    w.integer(static_cast<int64_t>(s.client().id));
  } else if (iequals(sub, "setinfo")) {
    if (!arity(4, "setinfo")) return;
    const bool is_name = iequals(a[2], "lib-name");
    if (!is_name && !iequals(a[2], "lib-ver")) {
      return w.error(err::unrecognized_option(a[2]));
    }
    if (!ClientRegistry::valid_name(a[3])) {
      return w.error(err::lib_field_chars(is_name ? "lib-name" : "lib-ver"));
    }
    reg.set_lib(s.client(), is_name, std::string(a[3]));
    w.ok();
  } else if (iequals(sub, "list")) {
    // CLIENT LIST [TYPE type | ID id [id ...] | DOOR door]
    ClientFilter f;
    if (a.size() == 4 && iequals(a[2], "type")) {
      if (!ClientFilter::type_named(a[3], f.type)) return w.error(err::unknown_client_type(a[3]));
    } else if (a.size() == 4 && iequals(a[2], "door")) {
      if (!ClientFilter::door_named(a[3], f.door)) return w.error(err::unknown_door(a[3]));
    } else if (a.size() > 3 && iequals(a[2], "id")) {
      std::string out;
      for (size_t i = 3; i < a.size(); ++i) {
        int64_t id;
        if (!parse_int(a[i], id)) return w.error(err::kInvalidClientId);
        const auto c = id > 0 ? reg.find(static_cast<uint64_t>(id)) : nullptr;
        if (c && !c->killed.load(std::memory_order_relaxed)) out += reg.describe(*c, now_ms) + "\n";
      }
      return w.bulk(out);
    } else if (a.size() != 2) {
      return w.error(err::kSyntax);
    }
    w.bulk(reg.list(now_ms, f));
  } else if (iequals(sub, "kill")) {
    client_kill(s, a, now_ms);
  } else if (iequals(sub, "info")) {
    if (!arity(2, "info")) return;
    w.bulk(reg.describe(s.client(), now_ms) + "\n");
  } else if (iequals(sub, "no-evict") || iequals(sub, "no-touch")) {
    if (a.size() != 3 || (!iequals(a[2], "on") && !iequals(a[2], "off"))) {
      return w.error(err::kSyntax);
    }
    // NO-EVICT: maxmemory-clients passes this client by (NO-TOUCH changes nothing here).
    if (iequals(sub, "no-evict")) s.client().no_evict.store(iequals(a[2], "on"));
    w.ok();
  } else if (iequals(sub, "unblock")) {
    // CLIENT UNBLOCK id [TIMEOUT|ERROR]: a client waiting in a blocking pop answers now, as if
    // it had timed out (a null) or with -UNBLOCKED; 1 if it was waiting, else 0.
    if (a.size() != 3 && a.size() != 4) return w.error(err::wrong_arity("client|unblock"));
    int64_t id;
    if (!parse_int(a[2], id)) return w.error(err::kNotInteger);
    uint8_t how = 1;
    if (a.size() == 4) {
      if (iequals(a[3], "error")) {
        how = 2;
      } else if (!iequals(a[3], "timeout")) {
        return w.error(err::kUnblockReason);
      }
    }
    const std::shared_ptr<ClientInfo> c = id > 0 ? reg.find(static_cast<uint64_t>(id)) : nullptr;
    const uint64_t ticket = c ? c->block_ticket.load() : 0;
    if (ticket == 0) return w.integer(0);
    c->unblock.store(how);
    w.integer(s.svc().waiters.wake(ticket) ? 1 : 0);
  } else if (iequals(sub, "help")) {
    static constexpr const char* lines[] = {
        "CLIENT <subcommand> [<arg> ...]. Subcommands are:",
        "SETNAME <name>",
        "GETNAME",
        "ID",
        "SETINFO <LIB-NAME|LIB-VER> <value>",
        "LIST [TYPE <type> | ID <id> [<id> ...] | DOOR <door>]",
        "INFO",
        "KILL <ip:port>",
        "KILL <filter> <value> [<filter> <value> ...]",
        "    filters: ID, ADDR, LADDR, USER, TYPE, DOOR (resp, native, rls),",
        "    SKIPME (YES|NO, default YES), MAXAGE <seconds>",
        "REPLY <ON|OFF|SKIP>",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "HELP"};
    w.help(lines);
  } else {
    w.error(err::unknown_subcommand(sub, "CLIENT HELP"));
  }
}

}  // namespace fg
