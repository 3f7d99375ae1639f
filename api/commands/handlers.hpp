// Command handlers, one per command; the table in command_table.cpp names them.
#pragma once
#include <string_view>
#include <vector>

#include "command_context.hpp"

namespace fg {

using Args = std::vector<std::string_view>;

// limiter_commands.cpp
void cmd_cl_throttle(CommandContext& s, Args& a);
void cmd_fg_take(CommandContext& s, Args& a);
void cmd_fg_takeall(CommandContext& s, Args& a);
void cmd_fg_peek(CommandContext& s, Args& a);
void cmd_fg_adjust(CommandContext& s, Args& a);
void cmd_fg_reset(CommandContext& s, Args& a);
void cmd_fg_acquire(CommandContext& s, Args& a);
void cmd_fg_renew(CommandContext& s, Args& a);
void cmd_fg_release(CommandContext& s, Args& a);
void cmd_fg_count(CommandContext& s, Args& a);
void cmd_fg_heartbeat(CommandContext& s, Args& a);
void cmd_fg_releaseall(CommandContext& s, Args& a);
void cmd_fg_policy(CommandContext& s, Args& a);
void cmd_fg_rls(CommandContext& s, Args& a);

// connection_commands.cpp
void cmd_ping(CommandContext& s, Args& a);
void cmd_echo(CommandContext& s, Args& a);
void cmd_hello(CommandContext& s, Args& a);
void cmd_auth(CommandContext& s, Args& a);
void cmd_quit(CommandContext& s, Args& a);
void cmd_reset(CommandContext& s, Args& a);
void cmd_select(CommandContext& s, Args& a);
void cmd_client(CommandContext& s, Args& a);
void cmd_fg_deadline(CommandContext& s, Args& a);

void cmd_function(CommandContext& s, Args& a);
void cmd_object(CommandContext& s, Args& a);      // data_commands.cpp
void cmd_xread(CommandContext& s, Args& a);       // data_commands.cpp
void cmd_xreadgroup(CommandContext& s, Args& a);  // data_commands.cpp
void cmd_xgroup(CommandContext& s, Args& a);      // data_commands.cpp
void cmd_gcra(CommandContext& s, Args& a);        // limiter_commands.cpp
void cmd_xinfo(CommandContext& s, Args& a);       // data_commands.cpp
void cmd_memory(CommandContext& s, Args& a);      // data_commands.cpp  // script_commands.cpp

// pubsub_commands.cpp
void cmd_subscribe(CommandContext& s, Args& a);
void cmd_unsubscribe(CommandContext& s, Args& a);
void cmd_psubscribe(CommandContext& s, Args& a);
void cmd_punsubscribe(CommandContext& s, Args& a);
void cmd_ssubscribe(CommandContext& s, Args& a);
void cmd_sunsubscribe(CommandContext& s, Args& a);
void cmd_publish(CommandContext& s, Args& a);
void cmd_spublish(CommandContext& s, Args& a);
void cmd_pubsub(CommandContext& s, Args& a);

// server_commands.cpp
void cmd_info(CommandContext& s, Args& a);
void cmd_command(CommandContext& s, Args& a);
void cmd_config(CommandContext& s, Args& a);
void cmd_slowlog(CommandContext& s, Args& a);
// The words SLOWLOG keeps of a command (spec: its row): false when it keeps none (EXEC, whose
// commands are logged one by one); secrets (AUTH's and HELLO's passwords, ACL SETUSER's rules,
// CONFIG SET's passwords) replaced by "(redacted)", as Redis does.
bool slowlog_words(std::string_view name, std::vector<std::string_view>& words);
void cmd_dbsize(CommandContext& s, Args& a);
void cmd_save(CommandContext& s, Args& a);
void cmd_bgsave(CommandContext& s, Args& a);
void cmd_lastsave(CommandContext& s, Args& a);
void cmd_shutdown(CommandContext& s, Args& a);
void cmd_time(CommandContext& s, Args& a);

// data_commands.cpp: a Redis data command, a DataCmd for the request core (rows that name a
// data op run through it: run_command).
void data_request(CommandContext& s, Args& a, DataCmd c);
void cmd_block(CommandContext& s, Args& a);  // BLPOP and the other blocking pops

// transactions (the session queues and runs them)
void cmd_multi(CommandContext& s, Args& a);
void cmd_exec(CommandContext& s, Args& a);
void cmd_discard(CommandContext& s, Args& a);
void cmd_watch(CommandContext& s, Args& a);
void cmd_unwatch(CommandContext& s, Args& a);

// script_commands.cpp: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO; SCRIPT
void cmd_eval(CommandContext& s, Args& a);
void cmd_script(CommandContext& s, Args& a);

// acl_commands.cpp
void cmd_acl(CommandContext& s, Args& a);

// cluster_commands.cpp
void cmd_cluster(CommandContext& s, Args& a);
void cmd_asking(CommandContext& s, Args& a);  // ASKING, READONLY, READWRITE

}  // namespace fg
