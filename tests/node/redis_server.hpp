// redis-server (Debian's) as the reference the differential tests compare a node with,
// and reading whole RESP values from either.
#pragma once
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "node_process.hpp"

namespace fg::testing {

// One whole RESP value from `c`, as its bytes ("" if the connection ended).
inline std::string read_value(Client& c) {
  std::string line;
  while (line.size() < 2 || line.compare(line.size() - 2, 2, "\r\n") != 0) {
    std::string one = c.recv_n(1);
    if (one.empty()) return "";
    line += one;
  }
  const char t = line[0];
  if ((t == '$' || t == '=' || t == '!') && line != "$-1\r\n") {
    return line + c.recv_n(std::stoul(line.substr(1)) + 2);
  }
  if ((t == '*' || t == '~' || t == '>' || t == '%' || t == '|') && line != "*-1\r\n") {
    const long n = std::stol(line.substr(1)) * (t == '%' || t == '|' ? 2 : 1);
    for (long i = 0; i < n; ++i) line += read_value(c);
  }
  return line;
}

inline std::string encode(const std::vector<std::string>& words) {
  std::string in = "*" + std::to_string(words.size()) + "\r\n";
  for (auto& w : words) in += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
  return in;
}

// One command and its reply ("" when the connection is gone).
inline std::string ask(Client& c, const std::vector<std::string>& words) {
  return c.send(encode(words)) ? read_value(c) : "";
}

// A command's words for a failure message: quoted, each cut at 64 bytes.
inline std::string printable(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += "'" + w.substr(0, 64) + (w.size() > 64 ? "...' " : "' ");
  return s;
}

// One step of a conversation over several connections, run alike against redis-server and a
// node (converse), so every value read can be compared.
struct Step {
  int who;                         // which connection
  std::vector<std::string> words;  // sent first (none: only read)
  int replies;                     // values then read from it
  int pause_ms = 0;                // after sending: time for a waiting client to settle
  bool compare = true;             // false: what differs by design (HELLO's server fields)
};

// Runs `steps` on `conns` and returns every value read, step by step.
inline std::vector<std::string> converse(std::vector<std::unique_ptr<Client>>& conns,
                                         const std::vector<Step>& steps) {
  std::vector<std::string> out;
  for (const Step& s : steps) {
    Client& c = *conns[static_cast<size_t>(s.who)];
    if (!s.words.empty()) c.send(encode(s.words));
    if (s.pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(s.pause_ms));
    std::string got;
    for (int i = 0; i < s.replies; ++i) got += read_value(c);
    out.push_back(s.compare ? got : "");
  }
  return out;
}

// Runs `steps` over `n` connections to a node and `n` to redis-server and compares every
// value read, step by step. The connections are handed back open, for more.
struct Conversation {
  std::vector<std::unique_ptr<Client>> fg, rc;
};
inline Conversation expect_same_conversation(int node_port, int redis_port, size_t n,
                                             const std::vector<Step>& steps) {
  Conversation c;
  for (size_t i = 0; i < n; ++i) {
    c.fg.push_back(std::make_unique<Client>(node_port));
    c.rc.push_back(std::make_unique<Client>(redis_port));
  }
  EXPECT_TRUE(c.rc[0]->connected()) << "redis-server did not start";
  if (!c.rc[0]->connected()) return c;
  const auto a = converse(c.fg, steps);
  const auto b = converse(c.rc, steps);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(a[i], b[i]) << "step " << i << ": " << printable(steps[i].words);
  }
  return c;
}

class RedisServer {
 public:
  // `extra`: more redis-server arguments ("--aclfile", path).
  explicit RedisServer(const std::vector<std::string>& extra = {}) : port_(free_port()) {
    std::vector<std::string> args = {
        "redis-server", "--port", std::to_string(port_), "--save",     "",       "--appendonly",
        "no",           "--bind", "127.0.0.1",           "--loglevel", "warning"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = spawn(args);
    for (int i = 0; i < 100; ++i) {
      Client c(port_, 200);
      if (c.connected()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~RedisServer() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  int port() const { return port_; }

 private:
  int port_;
  pid_t pid_ = -1;
};

// A pmessage as "channel message" (for a failure's text).
inline std::string brief_message(const std::string& m) {
  std::vector<std::string> parts;
  for (size_t at = 0; at < m.size();) {
    const size_t end = m.find("\r\n", at);
    if (end == std::string::npos) break;
    const std::string part = m.substr(at, end - at);
    if (!part.empty() && part[0] != '*' && part[0] != '$') parts.push_back(part);
    at = end + 2;
  }
  return parts.size() == 4 ? parts[2] + " " + parts[3] : m;
}

// Every message a subscriber has been sent by now (read until none comes for its timeout).
inline std::vector<std::string> drain_messages(Client& subscriber) {
  std::vector<std::string> got;
  for (std::string m = read_value(subscriber); !m.empty(); m = read_value(subscriber))
    got.push_back(std::move(m));
  return got;
}

// Keyspace notifications against the real thing: `commands` commands from `next` to
// redis-server and to a node of four shards, each with a subscriber to every keyspace and
// keyevent channel, and every message compared in order, 250 commands at a time. (Expiry's
// events are left out: when a key past its deadline is seen differs between two servers run
// side by side.)
inline void expect_same_notifications(const std::function<std::vector<std::string>()>& next,
                                      int commands, const std::string& what) {
  const std::string flags = "g$lshztnKE";
  RedisServer redis;
  NodeProcess node({"--shards", "4", "--notify-keyspace-events", flags});
  ASSERT_TRUE(node.alive());
  Client fg(node.port()), rc(redis.port());
  ASSERT_TRUE(rc.connected()) << "redis-server did not start";
  ASSERT_EQ(ask(rc, {"CONFIG", "SET", "notify-keyspace-events", flags}), "+OK\r\n");
  ASSERT_EQ(ask(fg, {"CONFIG", "GET", "notify-keyspace-events"}),
            ask(rc, {"CONFIG", "GET", "notify-keyspace-events"}));
  Client fs(node.port(), 150), rs(redis.port(), 150);
  for (Client* s : {&fs, &rs}) {
    ASSERT_EQ(ask(*s, {"PSUBSCRIBE", "__key*__:*"}),
              "*3\r\n$10\r\npsubscribe\r\n$10\r\n__key*__:*\r\n:1\r\n");
  }
  size_t messages = 0;
  std::deque<std::string> recent;
  for (int i = 1; i <= commands; ++i) {
    const std::vector<std::string> w = next();
    if (recent.size() == 250) recent.pop_front();
    recent.push_back(printable(w));
    ASSERT_TRUE(fg.send(encode(w)));
    ASSERT_TRUE(rc.send(encode(w)));
    ASSERT_FALSE(read_value(fg).empty())
        << "Floodgate closed the connection after " << printable(w);
    read_value(rc);
    if (i % 250 != 0 && i != commands) continue;
    const auto a = drain_messages(fs), b = drain_messages(rs);
    messages += b.size();
    if (a == b) continue;
    size_t k = 0;  // (the first message that differs, and a few around it)
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    const size_t from = k > 4 ? k - 4 : 0;
    std::string text = what + ", commands up to " + std::to_string(i) + ", message " +
                       std::to_string(k) + ":\n  floodgate:";
    for (size_t j = from; j < a.size() && j < k + 4; ++j) text += "\n    " + brief_message(a[j]);
    text += "\n  redis:";
    for (size_t j = from; j < b.size() && j < k + 4; ++j) text += "\n    " + brief_message(b[j]);
    text += "\n  commands:";
    for (const auto& c : recent) text += "\n    " + c;
    FAIL() << text;
  }
  EXPECT_GT(messages, static_cast<size_t>(commands) / 4)
      << "the sequence published next to nothing: nothing was compared";
}

}  // namespace fg::testing
