// COMMAND DOCS and COMMAND INFO's tips, in Redis 7's shape, made from the registry's rows:
// a row's syntax line read into Redis's argument tree, and the tips its data op implies.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "command_table.hpp"
#include "resp_writer.hpp"

namespace fg {

// One argument as COMMAND DOCS describes it: a value (`type` string, integer, double, key,
// pattern, unix-time), a pure token, or a oneof / block of arguments.
struct DocArg {
  std::string name;
  std::string type;
  std::string token;  // the word before it (EX seconds), or the token itself (NX)
  bool optional = false;
  bool multiple = false;
  bool dots = false;         // (while reading: a repetition, "[x ...]")
  std::vector<DocArg> args;  // a oneof's choices, a block's parts
};

// A syntax line ("key value [NX | XX] [EX seconds | PX milliseconds]") as Redis's argument
// tree: brackets are optional, `|` a choice, "x [x ...]" one argument given many times.
std::vector<DocArg> parse_syntax(std::string_view syntax);

// COMMAND INFO's tips for a row: the request and response policies its data op implies
// (keys split over shards: multi_shard; every shard's: all_shards; the parts added up,
// all succeeded, or any of them), and its nondeterministic output.
std::vector<std::string> command_tips(const CommandSpec& c);

// One command's COMMAND DOCS entry: its name, then the map (summary, since, group,
// arguments, subcommands).
void write_command_docs(RespWriter& w, const CommandSpec& c);

}  // namespace fg
