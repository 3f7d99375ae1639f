// Command handlers, one per command; the table in command_table.cpp names them.
#pragma once
#include <string_view>
#include <vector>

namespace fg {

class Session;
using Args = std::vector<std::string_view>;

// limiter_commands.cpp
void cmd_cl_throttle(Session& s, Args& a);
void cmd_fg_take(Session& s, Args& a);
void cmd_fg_peek(Session& s, Args& a);
void cmd_fg_reset(Session& s, Args& a);
void cmd_fg_acquire(Session& s, Args& a);
void cmd_fg_renew(Session& s, Args& a);
void cmd_fg_release(Session& s, Args& a);
void cmd_fg_count(Session& s, Args& a);
void cmd_fg_heartbeat(Session& s, Args& a);
void cmd_fg_releaseall(Session& s, Args& a);
void cmd_fg_policy(Session& s, Args& a);

// connection_commands.cpp
void cmd_ping(Session& s, Args& a);
void cmd_echo(Session& s, Args& a);
void cmd_hello(Session& s, Args& a);
void cmd_auth(Session& s, Args& a);
void cmd_quit(Session& s, Args& a);
void cmd_select(Session& s, Args& a);
void cmd_client(Session& s, Args& a);

// server_commands.cpp
void cmd_info(Session& s, Args& a);
void cmd_command(Session& s, Args& a);
void cmd_config(Session& s, Args& a);
void cmd_dbsize(Session& s, Args& a);
void cmd_time(Session& s, Args& a);

// cluster_commands.cpp
void cmd_cluster(Session& s, Args& a);
void cmd_asking(Session& s, Args& a);  // ASKING, READONLY, READWRITE

}  // namespace fg
