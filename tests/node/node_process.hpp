// Test helpers for real processes: a floodgate child on a free loopback port, and a
// blocking socket client with timeouts. Everything stops by itself.
#pragma once
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace fg::testing {

inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class Client {
 public:
  explicit Client(int port, int timeout_ms = 5000, const char* host = "127.0.0.1") {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host, &a.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Client() {
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return connected_; }
  bool send(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until `n` bytes arrived, the peer closed, or the timeout hit.
  std::string recv_n(size_t n) {
    std::string out;
    char buf[65536];
    while (out.size() < n) {
      ssize_t r = ::recv(fd_, buf, std::min(sizeof buf, n - out.size()), 0);
      if (r <= 0) break;
      out.append(buf, static_cast<size_t>(r));
    }
    return out;
  }
  // Reads until the data ends with `suffix`, the peer closed, or the timeout hit.
  std::string recv_until(const std::string& suffix) {
    std::string out;
    char buf[65536];
    while (out.size() < suffix.size() ||
           out.compare(out.size() - suffix.size(), suffix.size(), suffix) != 0) {
      ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
      if (r <= 0) break;
      out.append(buf, static_cast<size_t>(r));
    }
    return out;
  }
  // Reads whatever arrives until the peer closes or the timeout hits.
  std::string recv_all() { return recv_n(size_t{1} << 30); }
  // True when the peer has closed the connection (EOF or reset) within the timeout.
  bool closed_by_peer() {
    char c;
    ssize_t r = ::recv(fd_, &c, 1, 0);
    return r == 0 || (r < 0 && errno == ECONNRESET);
  }
  std::string cmd(const std::vector<std::string>& words, size_t reply_bytes) {
    std::string in = "*" + std::to_string(words.size()) + "\r\n";
    for (auto& w : words) in += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
    send(in);
    return recv_n(reply_bytes);
  }
  // Sends a command and reads one reply line ("+OK", ":12", "-ERR ...") or, for a bulk
  // string reply, its whole payload.
  std::string request(const std::vector<std::string>& words) {
    std::string in = "*" + std::to_string(words.size()) + "\r\n";
    for (auto& w : words) in += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
    send(in);
    std::string line;
    while (line.size() < 2 || line.compare(line.size() - 2, 2, "\r\n") != 0) {
      std::string one = recv_n(1);
      if (one.empty()) return line;
      line += one;
    }
    if (line[0] != '$' || line == "$-1\r\n") return line.substr(0, line.size() - 2);
    const size_t n = std::stoul(line.substr(1));
    std::string body = recv_n(n + 2);
    return body.substr(0, n);
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct HttpReply {
  int status = 0;  // 0: no answer
  std::string body;
};

// One HTTP/1.0 GET on loopback (the admin port); the server closes when done.
// `headers`: more request header lines, each ending in "\r\n".
inline HttpReply http_get_at(const std::string& host, int port, const std::string& path,
                             const std::string& headers = "") {
  Client c(port, 3000, host.c_str());
  HttpReply r;
  if (!c.connected() ||
      !c.send("GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" + headers + "\r\n")) {
    return r;
  }
  const std::string all = c.recv_n(8 << 20);
  if (all.compare(0, 5, "HTTP/") != 0) return r;
  r.status = std::atoi(all.c_str() + all.find(' ') + 1);
  const auto at = all.find("\r\n\r\n");
  if (at != std::string::npos) r.body = all.substr(at + 4);
  return r;
}

inline HttpReply http_get(int port, const std::string& path, const std::string& headers = "") {
  return http_get_at("127.0.0.1", port, path, headers);
}

// Starts `args` (the program found on PATH when it has no '/') as a child; its pid. The
// child is killed when the test process dies, even by a crash (it would otherwise live on,
// holding the test's output open).
inline pid_t spawn(std::vector<std::string> args) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // (it died before the line above)
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Writes `text` to a file of the test's own (its name made unique to this process).
inline std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

class NodeProcess {
 public:
  // A node that exits before it listens most likely lost a port it was given to a test
  // running alongside (ports are chosen free, then bound by the child): it is started again
  // on fresh ports, twice at most.
  explicit NodeProcess(std::vector<std::string> extra = {}) {
    for (int attempt = 0; attempt < 3 && !start(extra); ++attempt) {
    }
  }
  ~NodeProcess() { stop(); }
  // Whether `port` accepts before the process exits; a process that exited is reaped
  // (pid -1: alive() is false, so callers start it again on fresh ports).
  bool wait_for_port(int port) {
    if (port <= 0) return true;
    for (int i = 0; i < 200; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      Client c(port, 200);
      if (c.connected()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
  }
  // Waits (at most `timeout_ms`) for the process to exit by itself; its exit status, or -1.
  int wait_exit(int timeout_ms = 5000) {
    for (int i = 0; i < timeout_ms / 20 && pid_ > 0; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  // kill -9: no goodbye, no hand-off.
  void kill9() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  int port() const { return port_; }
  int native_port() const { return native_port_; }
  int admin_port() const { return admin_port_; }
  pid_t pid() const { return pid_; }
  bool alive() const { return pid_ > 0 && kill(pid_, 0) == 0; }
  long rss_kb() const { return status_kb("VmRSS:"); }
  long peak_rss_kb() const { return status_kb("VmHWM:"); }  // the most it has held so far
  long status_kb(const char* field) const {
    FILE* f = fopen(("/proc/" + std::to_string(pid_) + "/status").c_str(), "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    const size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
      if (strncmp(line, field, n) == 0) kb = atol(line + n);
    fclose(f);
    return kb;
  }

 private:
  // One try: false if the process exited before its ports opened.
  bool start(const std::vector<std::string>& extra) {
    port_ = -1;
    native_port_ = -1;
    admin_port_ = -1;
    for (size_t i = 0; i + 1 < extra.size(); ++i) {
      if (extra[i] == "--port") port_ = std::stoi(extra[i + 1]);  // (a restart on its ports)
    }
    std::vector<std::string> args = {FLOODGATE_BIN, "--log-level", "warn"};
    if (port_ < 0) {
      port_ = free_port();
      args.push_back("--port");
      args.push_back(std::to_string(port_));
    }
    // A free native port too, unless the test chose one (RESP + 1000 may be taken by a
    // test running alongside).
    std::string auth;  // (a node with an admin token shows /cluster to its holder only)
    std::string admin_host = "127.0.0.1";
    for (size_t i = 0; i + 1 < extra.size(); ++i) {
      if (extra[i] == "--native-port") native_port_ = std::stoi(extra[i + 1]);
      if (extra[i] == "--admin-port") admin_port_ = std::stoi(extra[i + 1]);
      if (extra[i] == "--admin-bind") admin_host = extra[i + 1];
      if (extra[i] == "--admin-token-file") {
        std::ifstream in(extra[i + 1]);
        std::string token;
        in >> token;
        auth = "Authorization: Bearer " + token + "\r\n";
      }
    }
    if (native_port_ < 0) {
      native_port_ = free_port();
      args.push_back("--native-port");
      args.push_back(std::to_string(native_port_));
    }
    if (admin_port_ < 0) {  // the same for the admin HTTP port (RESP + 2000)
      admin_port_ = free_port();
      args.push_back("--admin-port");
      args.push_back(std::to_string(admin_port_));
    }
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = spawn(args);
    // Up to 10 s for the RESP port to open, then the admin port (bound later: a port taken
    // meanwhile by a test alongside makes the node exit after its RESP port opened, and
    // the port answering is then someone else's).
    if (!wait_for_port(port_)) return pid_ > 0;  // (alive but silent: no second try)
    if (admin_port_ <= 0) return true;
    const std::string mine = "\"resp_port\":" + std::to_string(port_) + ",";
    for (int i = 0; i < 100 && pid_ > 0; ++i) {
      if (http_get_at(admin_host, admin_port_, "/cluster", auth).body.find(mine) !=
          std::string::npos) {
        return true;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return pid_ > 0;
  }

  int port_ = -1;
  int native_port_ = -1;
  int admin_port_ = -1;
  pid_t pid_ = -1;
};

// One `key:value` field of an INFO reply ("" if it is not there).
inline std::string info_field(const std::string& info, const std::string& key) {
  const auto at = info.find(key + ":");
  if (at == std::string::npos) return "";
  const auto end = info.find_first_of("\r\n", at);
  return info.substr(at + key.size() + 1,
                     end == std::string::npos ? end : end - at - key.size() - 1);
}

// Runs a shell command, returns its stdout.
inline std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// A private CA with node and client certificates (deploy/make-certs), in a directory of
// this test process's own.
inline std::string make_certs(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + std::to_string(getpid()) + "-" + name;
  run("rm -rf '" + dir + "'");
  run(std::string(FLOODGATE_SOURCE_DIR) + "/deploy/make-certs '" + dir + "' >/dev/null 2>&1");
  return dir;
}

inline const std::string& certs() {
  static const std::string dir = make_certs("certs");
  return dir;
}

inline std::vector<std::string> tls_files(const std::string& dir) {
  return {"--tls-cert-file", dir + "/node.crt",    "--tls-key-file",
          dir + "/node.key", "--tls-ca-cert-file", dir + "/ca.crt"};
}

}  // namespace fg::testing
