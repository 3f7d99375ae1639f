// The command table: name, arity, flags, and the handler that either answers at once or
// hands one op to the owning shard. Every command the node knows is listed here.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acl.hpp"

namespace fg {

class CommandContext;

enum CommandFlag : uint32_t {
  kNoAuth = 1,   // allowed before AUTH
  kBarrier = 2,  // changes session state: runs only after earlier keyed work completes
  kKeyed = 4,    // first argument is a key (cluster routing, COMMAND info)
  kWrite = 8,
  kFast = 16,
  kScript = 32,   // runs a Lua script: how many go in one batch follows what they cost
  kNoMulti = 64,  // refused inside MULTI (Redis's no_multi: SAVE, SHUTDOWN)
};

using Handler = void (*)(CommandContext&, std::vector<std::string_view>&);

struct CommandSpec {
  const char* name;  // lower case, as COMMAND reports it
  int arity;         // Redis convention: N = exactly N words, -N = at least N
  uint32_t flags;
  const char* group;
  const char* since;
  const char* summary;
  const char* syntax;  // arguments after the name, for COMMAND DOCS and HELP texts
  Handler handler;
  // Keyed commands: where the keys are, as COMMAND reports them (first key 1, last key, step
  // between keys); -1: the last argument.
  int8_t last_key = 1;
  int8_t key_step = 1;
};

const CommandSpec* find_command(std::string_view name);  // case-insensitive
const std::vector<CommandSpec>& all_commands();

// Every command and subcommand with its ACL categories and keys; a command's entry is its
// command_id (acl_commands.cpp).
const AclCatalog& acl_catalog();

// Ids for metrics: a RESP command's place in the table; native ops from kNativeCommandBase;
// kUnknownCommandId for unknown commands and protocol errors.
constexpr uint16_t kNativeCommandBase = 192;
constexpr uint16_t kUnknownCommandId = 255;
inline uint16_t command_id(const CommandSpec* c) {
  return static_cast<uint16_t>(c - all_commands().data());
}
// "fg.take", "native.take", "unknown": the name a command id is reported under.
std::string command_id_name(uint16_t id);

}  // namespace fg
