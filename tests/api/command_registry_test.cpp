// The command registry: its rows are whole and agree with the shard's data ops (the table
// checks that when it is made: here it is made), and what is derived from it — ACL
// categories, the script allow-list, key positions — says what the rows say.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

#include "command_docs.hpp"
#include "command_table.hpp"
#include "native.pb.h"
#include "script_engine.hpp"

namespace fg {
namespace {

uint32_t cats(const char* name) {
  const int i = acl_catalog().find(name);
  EXPECT_GE(i, 0) << name;
  return i < 0 ? 0 : acl_catalog().at(i).categories;
}

TEST(CommandRegistry, EveryRowIsWholeAndNamedOnce) {
  std::set<std::string> names;
  for (const CommandSpec& c : all_commands()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_NE(c.arity, 0) << c.name;
    EXPECT_TRUE(c.summary && *c.summary) << c.name;
    EXPECT_EQ(find_command(std::string(c.name)), &c);
    std::set<std::string> subs;
    for (const SubcommandSpec& s : c.subcommands)
      EXPECT_TRUE(subs.insert(s.name).second) << c.name << "|" << s.name;
  }
  EXPECT_EQ(find_command("GeT"), find_command("get"));
  EXPECT_EQ(find_command("nosuch"), nullptr);
  EXPECT_EQ(find_command(std::string(40, 'g')), nullptr);
}

// @write from the write flag (not for scripts, nor a container: its subcommands say), @fast
// from the fast flag, else @slow.
TEST(CommandRegistry, FlagsImplyTheirAclCategories) {
  const uint32_t write = acl_category_bits("write"), fast = acl_category_bits("fast"),
                 slow = acl_category_bits("slow"), read = acl_category_bits("read");
  EXPECT_EQ(cats("get"), acl_category_bits("read string fast"));
  EXPECT_EQ(cats("set"), acl_category_bits("write string slow"));
  EXPECT_EQ(cats("eval") & write, 0u);
  EXPECT_EQ(cats("fg.take"), acl_category_bits("write fast limiter"));
  EXPECT_EQ(cats("fg.policy|set"), acl_category_bits("admin slow dangerous"));
  EXPECT_EQ(cats("xgroup"), acl_category_bits("slow"));
  EXPECT_EQ(cats("xgroup|create"), acl_category_bits("write stream slow"));
  for (const CommandSpec& c : all_commands()) {
    const uint32_t got = cats(c.name);
    EXPECT_EQ((got & fast) != 0, (c.flags & kFast) != 0) << c.name;
    EXPECT_EQ((got & slow) != 0, (c.flags & kFast) == 0) << c.name;
    if (!(got & acl_category_bits("scripting")) && c.subcommands.empty()) {
      EXPECT_EQ((got & write) != 0, (c.flags & kWrite) != 0) << c.name;
    }
    if (got & read) {
      EXPECT_FALSE(c.flags & kWrite) << c.name << " reads and writes";
    }
  }
}

TEST(CommandRegistry, ScriptsCallTheDataOpsAScriptMayRun) {
  EXPECT_EQ(script_callable("GET").arity, 2);
  EXPECT_EQ(script_callable("GET").data, DataCmd::kGet);
  EXPECT_EQ(script_callable("mset").data, DataCmd::kMSet);
  EXPECT_EQ(script_callable("keys").data, DataCmd::kKeys);
  for (const char* refused : {"scan", "flushall", "eval", "evalsha_ro", "watch", "exec", "fg.take",
                              "cl.throttle", "shutdown", "acl"}) {
    EXPECT_NE(script_callable(refused).arity, 0) << refused;  // known: "not allowed"
    EXPECT_EQ(script_callable(refused).data, DataCmd::kNone) << refused;
  }
  EXPECT_EQ(script_callable("nosuch").arity, 0);  // unknown
}

TEST(CommandRegistry, KeysAreWhereTheRowSays) {
  auto keys_of = [](std::vector<std::string_view> words) {
    std::vector<std::string_view> out;
    find_command(words[0])->for_each_key(words, [&](size_t j) { out.push_back(words[j]); });
    return out;
  };
  using V = std::vector<std::string_view>;
  EXPECT_EQ(keys_of({"get", "a"}), V({"a"}));
  EXPECT_EQ(keys_of({"set", "a", "1", "EX", "5"}), V({"a"}));
  EXPECT_EQ(keys_of({"mset", "a", "1", "b", "2"}), V({"a", "b"}));
  EXPECT_EQ(keys_of({"del", "a", "b", "c"}), V({"a", "b", "c"}));
  EXPECT_EQ(keys_of({"eval", "return 1", "1", "a"}), V());  // (counted keys: its own walk)
  EXPECT_EQ(keys_of({"ping"}), V());
  const AclCommand& set = acl_catalog().at(acl_catalog().find("set"));
  EXPECT_TRUE(set.writes && !set.reads && set.reads_with_get);
  const AclCommand& eval = acl_catalog().at(acl_catalog().find("eval_ro"));
  EXPECT_EQ(eval.numkeys_at, 2);
  EXPECT_TRUE(eval.reads && !eval.writes);
}

}  // namespace
}  // namespace fg

// --- the generated lists in api/COMMANDS.md and api/README.md ------------------------

namespace fg {
namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string cell(std::string_view s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// One line per command: what COMMAND and ACL CAT say of it, and its doc line.
std::string command_table() {
  std::string out =
      "| command | arity | flags | ACL categories | what it does |\n|---|---|---|---|---|\n";
  for (const CommandSpec& c : all_commands()) {
    std::string flags;
    auto flag = [&](uint32_t f, const char* name) {
      if (c.flags & f) flags += std::string(flags.empty() ? "" : " ") + name;
    };
    flag(kWrite, "write");
    flag(kFast, "fast");
    flag(kNoAuth, "no_auth");
    flag(kNoMulti, "no_multi");
    flag(kScript, "script");
    std::string cats;
    const uint32_t bits = acl_catalog().at(command_id(&c)).categories;
    for (const auto& [name, bit] : acl_categories())
      if (bits & bit) cats += std::string(cats.empty() ? "@" : " @") + name;
    out += "| `" + upper(c.name) + "` | " + std::to_string(c.arity) + " | " + flags + " | " + cats +
           " | " + cell(c.summary) + " |\n";
  }
  return out;
}

// The commands by COMMAND DOCS group, in the registry's order.
std::string command_groups() {
  std::vector<std::pair<std::string, std::string>> groups;
  for (const CommandSpec& c : all_commands()) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == c.group; });
    if (it == groups.end()) it = groups.insert(groups.end(), {c.group, ""});
    it->second += " `" + upper(c.name) + "`";
  }
  std::string out;
  for (const auto& [group, names] : groups) out += "- **" + group + "**:" + names + "\n";
  return out;
}

// Checks (or, with FG_UPDATE_DOCS set, rewrites) the block of `file` between the marker
// lines "<!-- `marker`: generated ... -->" and "<!-- `marker`: end -->".
void check_block(const std::string& file, const std::string& marker, const std::string& want) {
  const std::string path = std::string(FLOODGATE_SOURCE_DIR) + "/" + file;
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string open = "<!-- " + marker + ": generated";
  const std::string close = "<!-- " + marker + ": end -->";
  const size_t a = text.find(open);
  ASSERT_NE(a, std::string::npos) << file << " has no " << open;
  const size_t body = text.find('\n', a) + 1;
  const size_t b = text.find(close, body);
  ASSERT_NE(b, std::string::npos) << file << " has no " << close;
  if (std::getenv("FG_UPDATE_DOCS")) {
    text.replace(body, b - body, want);
    std::ofstream(path) << text;
    return;
  }
  EXPECT_EQ(text.substr(body, b - body), want)
      << file << " lists the commands otherwise than the registry: rewrite it with "
      << "FG_UPDATE_DOCS=1 build/tests/api_test --gtest_filter='CommandRegistry.*'";
}

TEST(CommandRegistry, TheDocsListEveryCommandAsTheRowsSay) {
  check_block("api/COMMANDS.md", "registry", command_table());
  check_block("api/README.md", "registry-groups", command_groups());
}

}  // namespace
}  // namespace fg

namespace fg {
namespace {

// COMMAND DOCS reads each row's syntax line into Redis's argument tree: brackets are
// optional, "|" a choice, "x [x ...]" one argument many times, "EX seconds" a token with
// its value; every row's line reads whole (no bracket or bar left over as an argument).
TEST(CommandDocs, SyntaxLinesReadAsRedisDescribesArguments) {
  const auto set =
      parse_syntax("key value [NX | XX] [GET] [EX seconds | PX milliseconds | KEEPTTL]");
  ASSERT_EQ(set.size(), 5u);
  EXPECT_EQ(set[0].type, "key");
  EXPECT_EQ(set[2].type, "oneof");
  EXPECT_TRUE(set[2].optional);
  ASSERT_EQ(set[2].args.size(), 2u);
  EXPECT_EQ(set[2].args[1].token, "XX");
  EXPECT_EQ(set[3].type, "pure-token");
  ASSERT_EQ(set[4].args.size(), 3u);
  EXPECT_EQ(set[4].args[0].token, "EX");
  EXPECT_EQ(set[4].args[0].name, "seconds");
  EXPECT_EQ(set[4].args[0].type, "integer");
  const auto del = parse_syntax("key [key ...]");
  ASSERT_EQ(del.size(), 1u);
  EXPECT_TRUE(del[0].multiple);
  EXPECT_FALSE(del[0].optional);
  const auto mset = parse_syntax("key value [key value ...]");
  ASSERT_EQ(mset.size(), 1u);
  EXPECT_EQ(mset[0].type, "block");
  EXPECT_TRUE(mset[0].multiple);
  EXPECT_EQ(mset[0].args.size(), 2u);
  const auto eval = parse_syntax("script numkeys [key [key ...]] [arg [arg ...]]");
  ASSERT_EQ(eval.size(), 4u);
  EXPECT_EQ(eval[2].type, "key");
  EXPECT_TRUE(eval[2].optional && eval[2].multiple);
  const auto info = parse_syntax("[section ...]");
  ASSERT_EQ(info.size(), 1u);
  EXPECT_TRUE(info[0].optional && info[0].multiple);
  const auto linsert = parse_syntax("key BEFORE|AFTER pivot element");
  ASSERT_EQ(linsert.size(), 4u);
  EXPECT_EQ(linsert[1].type, "oneof");
  std::function<void(const DocArg&, const std::string&)> whole = [&](const DocArg& a,
                                                                     const std::string& where) {
    EXPECT_FALSE(a.name.empty()) << where;
    EXPECT_EQ(a.name.find_first_of("[]| "), std::string::npos) << where << ": " << a.name;
    for (const DocArg& c : a.args) whole(c, where);
  };
  for (const CommandSpec& c : all_commands()) {
    if (!c.subcommands.empty()) continue;
    for (const DocArg& a : parse_syntax(c.syntax)) whole(a, c.name);
  }
}

// EVAL's rows run its handler (the door's own checks) and name its op (the allow-list).
TEST(CommandRegistry, EvalHasItsHandlerAndItsOp) {
  for (const char* name : {"eval", "evalsha", "eval_ro", "evalsha_ro"}) {
    const CommandSpec* c = find_command(name);
    ASSERT_NE(c, nullptr);
    EXPECT_NE(c->run.handler, nullptr) << name;
    EXPECT_EQ(c->run.data, DataCmd::kEval) << name;
  }
}

// Every op of native.proto is either one the core serves, with a row naming its verb and
// the registry command whose ACL rights it needs, or the door's own (PING, TOPOLOGY); a
// forward that does not name its command is checked as the same command.
TEST(CommandRegistry, EveryNativeOpHasItsVerbAndItsAclCommand) {
  namespace pb = floodgate::native;
  std::set<int> seen;
  for (const NativeOp& o : native_ops()) {
    SCOPED_TRACE(o.command);
    EXPECT_TRUE(pb::Op_IsValid(o.op));
    EXPECT_TRUE(seen.insert(o.op).second) << "op listed twice";
    const CommandSpec* c = find_command(o.command);
    ASSERT_NE(c, nullptr) << "no such command in the registry";
    EXPECT_EQ(c->keyed(), keyed(o.verb));
    EXPECT_STREQ(acl_command_of(o.verb), o.command);
    EXPECT_EQ(find_native_op(o.op), &o);
  }
  for (int op = pb::Op_MIN; op <= pb::Op_MAX; ++op) {
    if (!pb::Op_IsValid(op) || op == pb::OP_UNKNOWN || op == pb::PING || op == pb::TOPOLOGY)
      continue;
    EXPECT_TRUE(seen.count(op)) << pb::Op_Name(op) << " has no row";
  }
  EXPECT_EQ(find_native_op(pb::PING), nullptr);
  EXPECT_EQ(find_native_op(999), nullptr);
}

}  // namespace
}  // namespace fg
