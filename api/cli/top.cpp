// floodgate-cli top: asks a node's /overview once a second and draws it to fit the terminal
// (80x24 at least): one line per node, the cluster's totals, the hottest and most-denied keys.
#include "top.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

namespace fgcli {

namespace {

volatile std::sig_atomic_t interrupted = 0;

// One HTTP/1.1 GET to host:port (Connection: close); the body of a 200, or why not.
bool http_get(const std::string& host_port, const std::string& path, const std::string& token,
              std::string& body, std::string& why) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return why = "--admin wants host:port", false;
  std::string host = host_port.substr(0, colon);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const std::string port = host_port.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return why = std::string("cannot resolve ") + host + ": " + gai_strerror(rc), false;
  }
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{3, 0};  // (the node answers within a second; a stuck one is not waited on)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return why = "cannot connect to " + host_port, false;
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + host_port + "\r\nConnection: close\r\n";
  if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
  req += "\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return why = "cannot send to " + host_port, false;
  }
  std::string all;
  char buf[16384];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) {
    all.append(buf, static_cast<size_t>(n));
    if (all.size() > (64u << 20)) break;
  }
  close(fd);
  const size_t end = all.find("\r\n\r\n");
  if (end == std::string::npos) return why = "no answer from " + host_port, false;
  const std::string status = all.substr(0, all.find("\r\n"));
  if (status.find(" 200 ") == std::string::npos) {
    why = host_port + " answered " + status.substr(status.find(' ') + 1);
    if (status.find(" 401 ") != std::string::npos) why += " (give --token-file)";
    return false;
  }
  body = all.substr(end + 4);
  return true;
}

// 1234567 -> "1.2M", within 6 characters.
std::string human(double v, bool bytes = false) {
  const char* units = bytes ? " KMGT" : " kMGT";
  const double step = bytes ? 1024 : 1000;
  int u = 0;
  while (v >= step * 0.9995 && u < 4) {
    v /= step;
    ++u;
  }
  char out[32];
  if (u == 0) {
    std::snprintf(out, sizeof out, v >= 100 || v == static_cast<int64_t>(v) ? "%.0f" : "%.2g", v);
  } else {
    std::snprintf(out, sizeof out,
                  v >= 100  ? "%.0f%c"
                  : v >= 10 ? "%.1f%c"
                            : "%.2f%c",
                  v, units[u]);
  }
  return out;
}

std::string fit(std::string s, size_t w) {
  if (s.size() > w) s = s.substr(0, w - 1) + "~";
  return s + std::string(w - s.size(), ' ');
}

std::string clock_now() {
  const time_t t = time(nullptr);
  tm parts{};
  gmtime_r(&t, &parts);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S UTC", &parts);
  return buf;
}

// The frame's lines (at most `rows`, each at most `cols` wide).
std::vector<std::string> frame(const YAML::Node& o, const std::string& from, size_t cols,
                               size_t rows) {
  std::vector<std::string> out;
  char line[512];
  const YAML::Node c = o["cluster"];
  size_t alive = 0;
  for (const auto& n : o["nodes"]) alive += n["state"].as<std::string>() == "alive";
  if (c["cluster_enabled"].as<bool>()) {
    std::snprintf(line, sizeof line, "Floodgate  epoch %s  %zu nodes (%zu alive)  %s  %s",
                  c["epoch"].as<std::string>().c_str(), o["nodes"].size(), alive,
                  c["quorum"].as<bool>() ? "quorum" : "NO QUORUM", clock_now().c_str());
  } else {
    std::snprintf(line, sizeof line, "Floodgate  standalone node  %s", clock_now().c_str());
  }
  std::string head = line;
  const std::string right = "q: quit";
  if (head.size() + right.size() + 1 < cols)
    head += std::string(cols - head.size() - right.size(), ' ') + right;
  out.push_back(head);
  out.push_back("via " + from);
  out.push_back("NODE            STATE   DEC/S  DENY/S  P99ms   CPU    MEM  CONNS   LAGms  KEYS");
  double dec = 0, den = 0;
  for (const auto& n : o["nodes"]) {
    const std::string id = n["id"].as<std::string>() + (n["self"].as<bool>() ? "*" : "");
    const std::string state = n["state"].as<std::string>();
    if (!n["reachable"].as<bool>()) {
      out.push_back(fit(id, 15) + " " + fit(state, 7) + " " + n["why"].as<std::string>(""));
      continue;
    }
    const YAML::Node p = n["report"]["now"];
    dec += p["decisions"].as<double>();
    den += p["denied"].as<double>();
    std::snprintf(line, sizeof line, "%s %s %6s  %6s %6.2f %5.2f %6s %6s %7.2f %5s",
                  fit(id, 15).c_str(), fit(state, 7).c_str(),
                  human(p["decisions"].as<double>()).c_str(),
                  human(p["denied"].as<double>()).c_str(), p["p99_ms"].as<double>(),
                  p["cpu"].as<double>(), human(p["rss_bytes"].as<double>(), true).c_str(),
                  human(p["resp_clients"].as<double>() + p["native_clients"].as<double>() +
                        p["gateway_clients"].as<double>())
                      .c_str(),
                  p["lag_ms"].as<double>(), human(p["keys"].as<double>()).c_str());
    out.push_back(line);
  }
  std::snprintf(line, sizeof line, "%s %s %6s  %6s", fit("cluster", 15).c_str(), fit("", 7).c_str(),
                human(dec).c_str(), human(den).c_str());
  out.push_back(line);
  out.push_back("");
  const size_t half = (cols - 1) / 2;
  // (both lists cover this minute and the one before)
  out.push_back(fit("HOTTEST KEYS (1-2 min)", half - 10) + " DECIDED   " +
                fit("MOST DENIED (1-2 min)", half - 10) + " DENIED");
  const YAML::Node hot = o["hot_keys"], denied = o["top_denied"];
  if (o["keys_hidden"].as<bool>()) {
    out.push_back("(key names: from this machine, or with --token-file)");
  }
  for (size_t i = 0; out.size() < rows && (i < hot.size() || i < denied.size()); ++i) {
    std::string l;
    auto cell = [&l, half](const YAML::Node& list, size_t i, const char* count) {
      if (i < list.size()) {
        l += fit(list[i]["key"].as<std::string>(), half - 10) + " " +
             fit(human(list[i][count].as<double>()), 8);
      } else {
        l += std::string(half - 1, ' ');
      }
      l += "  ";
    };
    cell(hot, i, "decisions");
    cell(denied, i, "denials");
    out.push_back(l);
  }
  if (out.size() > rows) out.resize(rows);
  for (auto& l : out)
    if (l.size() > cols) l.resize(cols);
  return out;
}

struct RawTerminal {
  termios saved{};
  bool on = false;
  void enter() {
    if (tcgetattr(STDIN_FILENO, &saved) != 0) return;
    termios raw = saved;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    on = true;
    std::fputs("\x1b[?1049h\x1b[?25l", stdout);  // the alternate screen, no cursor
    std::fflush(stdout);
  }
  ~RawTerminal() {
    if (!on) return;
    std::fputs("\x1b[?25h\x1b[?1049l", stdout);
    std::fflush(stdout);
    tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  }
};

}  // namespace

int run_top(const TopOptions& o) {
  std::string token;
  if (!o.token_file.empty()) {
    std::ifstream f(o.token_file);
    if (!f) {
      std::fprintf(stderr, "floodgate-cli: cannot read %s\n", o.token_file.c_str());
      return 2;
    }
    std::getline(f, token);
    while (!token.empty() && (token.back() == ' ' || token.back() == '\r')) token.pop_back();
  }
  auto draw = [&](size_t cols, size_t rows) -> std::pair<std::vector<std::string>, bool> {
    std::string body, why;
    if (!http_get(o.admin, "/overview", token, body, why)) {
      return {{"Floodgate  " + clock_now(), "cannot get the cluster's view: " + why,
               "(retrying every second; q: quit)"},
              false};
    }
    try {
      return {frame(YAML::Load(body), o.admin, cols, rows), true};
    } catch (const std::exception& e) {
      return {
          {"Floodgate  " + clock_now(), std::string("cannot read the node's answer: ") + e.what()},
          false};
    }
  };
  if (o.once) {
    auto [lines, ok] = draw(80, 24);
    for (const auto& l : lines) std::printf("%s\n", l.c_str());
    return ok ? 0 : 2;
  }
  std::signal(SIGINT, [](int) { interrupted = 1; });
  std::signal(SIGTERM, [](int) { interrupted = 1; });
  RawTerminal term;
  term.enter();
  while (!interrupted) {
    winsize ws{};
    size_t cols = 80, rows = 24;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
      cols = std::max<size_t>(ws.ws_col, 40);
      rows = std::max<size_t>(ws.ws_row, 10);
    }
    auto [lines, ok] = draw(cols, rows);
    std::string screen = "\x1b[H";
    for (size_t i = 0; i < lines.size(); ++i) {
      screen += lines[i] + "\x1b[K";
      if (i + 1 < lines.size()) screen += "\r\n";  // (no newline after the last: no scroll)
    }
    screen += "\x1b[J";
    std::fputs(screen.c_str(), stdout);
    std::fflush(stdout);
    // Wait for the next refresh, or a key.
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(o.interval_s * 1000)) > 0) {
      char ch = 0;
      if (read(STDIN_FILENO, &ch, 1) == 1 && (ch == 'q' || ch == 'Q' || ch == 3)) break;
    }
  }
  return 0;
}

}  // namespace fgcli
