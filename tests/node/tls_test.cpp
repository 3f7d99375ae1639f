// TLS on the doors: redis-cli --tls against a node and against redis-server with the same
// certificates (same answers, same refusals), a TLS-only node, certificates renewed on
// SIGHUP without dropping open connections, and the native client over TLS.
#include <gtest/gtest.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <cstring>
#include <ctime>
#include <fstream>
#include <regex>
#include <thread>

#include "floodgate/client.hpp"
#include "node_process.hpp"
#include "redis_server.hpp"
#include "resp_reply.hpp"

namespace fg::testing {
namespace {

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// redis-cli's output and exit code, the port in its messages written as PORT.
std::string cli(int port, const std::string& options, const std::string& command) {
  std::string out = run("timeout 5 redis-cli -p " + std::to_string(port) + " " + options + " " +
                        command + " 2>&1; echo rc=$?");
  return std::regex_replace(out, std::regex(":" + std::to_string(port)), ":PORT");
}

std::string with_cert(const std::string& dir) {
  return "--tls --cacert " + dir + "/ca.crt --cert " + dir + "/client.crt --key " + dir +
         "/client.key";
}

// expired.crt and expired.key in `dir`: a certificate of its CA that expired (signed with
// the clock set to 2020).
void make_expired(const std::string& dir) {
  run("cd '" + dir + "' && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 " +
      "-out expired.key 2>/dev/null && openssl req -new -key expired.key -subj /CN=expired " +
      "-out expired.csr && faketime '2020-01-01 00:00:00' openssl x509 -req -in expired.csr " +
      "-CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -out expired.crt 2>/dev/null");
  ASSERT_NE(run("openssl x509 -noout -enddate -in '" + dir + "/expired.crt'").find("2020"),
            std::string::npos);
}

// One RESP connection over TLS, kept open (the certificate it was served is its own).
class TlsClient {
 public:
  TlsClient(int port, const std::string& dir, bool cert = true)
      : ctx_(asio::ssl::context::tls_client) {
    asio::error_code ec;
    ctx_.load_verify_file(dir + "/ca.crt", ec);
    if (cert) {
      ctx_.use_certificate_chain_file(dir + "/client.crt", ec);
      ctx_.use_private_key_file(dir + "/client.key", asio::ssl::context::pem, ec);
    }
    // (after the context is complete: a stream takes its certificate when made)
    stream_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket>>(io_, ctx_);
    stream_->set_verify_mode(asio::ssl::verify_peer);
    auto& sock = stream_->next_layer();
    sock.connect({asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)}, ec);
    if (ec) return;
    timeval tv{5, 0};  // a node that does not answer fails the test, not hangs it
    setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    stream_->handshake(asio::ssl::stream_base::client, ec);
    ok_ = !ec;
  }
  bool ok() const { return ok_; }
  std::string request(const std::vector<std::string>& words) {
    asio::error_code ec;
    asio::write(*stream_, asio::buffer(encode(words)), ec);
    std::string in;
    char buf[4096];
    while (!ec && resp_value_length(in.data(), in.size()) == 0) {
      const size_t n = stream_->read_some(asio::buffer(buf), ec);
      in.append(buf, n);
    }
    return in;
  }
  // The serial number of the certificate the node showed, in hex.
  std::string served_serial() {
    X509* cert = SSL_get1_peer_certificate(stream_->native_handle());
    if (!cert) return "";
    BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get_serialNumber(cert), nullptr);
    char* hex = BN_bn2hex(bn);
    std::string out = hex;
    OPENSSL_free(hex);
    BN_free(bn);
    X509_free(cert);
    return out;
  }

 private:
  asio::io_context io_;
  asio::ssl::context ctx_;
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket>> stream_;
  bool ok_ = false;
};

std::string metric(int admin_port, const std::string& line_start) {
  const std::string m = "\n" + http_get(admin_port, "/metrics").body;
  const size_t at = m.find("\n" + line_start + " ");
  if (at == std::string::npos) return "";
  const size_t sp = m.find(' ', at + line_start.size());
  return m.substr(sp + 1, m.find('\n', sp) - sp - 1);
}

// redis-cli --tls gets the same from a node as from redis-server, both started with the
// same certificates: answers with a client certificate; refusals without one, from a
// plain connection to the TLS port, from a CA it does not trust, with another CA's or an
// expired client certificate; and with tls-auth-clients no and optional, what each then
// lets in. A connection open throughout is served throughout.
TEST(TlsDiff, RedisCliGetsWhatRedisServerGives) {
  const std::string& dir = certs();
  const std::string other = make_certs("other-ca");  // a CA neither server trusts
  make_expired(dir);
  for (const std::string auth : {"yes", "no", "optional"}) {
    const int redis_tls = free_port(), node_tls = free_port();
    RedisServer redis(with({"--tls-port", std::to_string(redis_tls), "--tls-auth-clients", auth},
                           tls_files(dir)));
    NodeProcess node(
        with({"--tls-port", std::to_string(node_tls), "--tls-auth-clients", auth}, tls_files(dir)));
    ASSERT_TRUE(node.alive());
    const std::vector<std::pair<std::string, std::string>> cases = {
        {with_cert(dir), "SET tls:k hello"},
        {with_cert(dir), "GET tls:k"},
        {with_cert(dir), "INCR tls:n"},
        {with_cert(dir) + " --sni localhost", "INCRBY tls:n 5"},
        {"--tls --cacert " + dir + "/ca.crt", "PING"},  // no client certificate
        {"", "PING"},                                   // plaintext to the TLS port
        {"--tls --cert " + dir + "/client.crt --key " + dir + "/client.key", "PING"},  // untrusted
        {"--tls --cacert " + dir + "/ca.crt --cert " + other + "/client.crt --key " + other +
             "/client.key",
         "PING"},  // a client certificate from a CA the server does not trust
        {"--tls --cacert " + dir + "/ca.crt --cert " + dir + "/expired.crt --key " + dir +
             "/expired.key",
         "PING"},                        // an expired client certificate
        {with_cert(dir), "INCR tls:n"},  // and after all those, served as before
    };
    TlsClient open(node_tls, dir);  // open through every refusal: only those connections end
    ASSERT_TRUE(open.ok());
    EXPECT_EQ(open.request({"PING"}), "+PONG\r\n");
    for (const auto& [options, command] : cases) {
      // (how a refused client notices — a reset, or the server's TLS alert and then its
      // close — is a race on both servers; redis-cli words the two differently)
      auto ended = [](std::string out) {
        for (const char* way :
             {"Error: Connection reset by peer", "Error: Server closed the connection"}) {
          const size_t at = out.find(way);
          if (at != std::string::npos)
            out.replace(at, std::strlen(way), "Error: (connection ended)");
        }
        return out;
      };
      const std::string want = ended(cli(redis_tls, options, command));
      const std::string got = ended(cli(node_tls, options, command));
      EXPECT_EQ(got, want) << "tls-auth-clients " << auth << ": redis-cli " << options << " "
                           << command;
    }
    EXPECT_EQ(open.request({"ECHO", "still here"}), "$10\r\nstill here\r\n");
  }
}

// With `port 0` and a TLS port, a node speaks TLS only, as redis-server does; INFO's
// tcp_port is then the TLS port (redis-server's rule).
TEST(Tls, PortZeroMeansTlsOnly) {
  const std::string& dir = certs();
  const int tls_port = free_port(), admin = free_port();
  const pid_t pid = spawn(
      with({FLOODGATE_BIN, "--port", "0", "--tls-port", std::to_string(tls_port), "--native-port",
            "0", "--admin-port", std::to_string(admin), "--log-level", "warn"},
           tls_files(dir)));
  std::string info;
  for (int i = 0; i < 100 && info.empty(); ++i) {
    TlsClient c(tls_port, dir);
    if (c.ok()) info = c.request({"INFO", "server"});
    if (info.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(info.find("tcp_port:" + std::to_string(tls_port) + "\r\n"), std::string::npos) << info;
  EXPECT_EQ(http_get(admin, "/healthz").status, 200);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// Renewed certificates (the files rewritten, then SIGHUP) serve new connections while open
// ones keep theirs and go on; unreadable files are refused and the old ones stay.
TEST(Tls, CertificatesReloadOnSighupWithoutDroppingConnections) {
  const std::string dir = make_certs("reload");
  const int tls_port = free_port();
  NodeProcess node(with({"--tls-port", std::to_string(tls_port)}, tls_files(dir)));
  ASSERT_TRUE(node.alive());
  TlsClient before(tls_port, dir);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before.request({"INCR", "reload:n"}), ":1\r\n");
  const std::string first = before.served_serial();
  ASSERT_FALSE(first.empty());

  run(std::string(FLOODGATE_SOURCE_DIR) + "/deploy/make-certs '" + dir + "' >/dev/null 2>&1");
  kill(node.pid(), SIGHUP);
  for (int i = 0;
       i < 100 && metric(node.admin_port(), "floodgate_tls_reloads_total{result=\"ok\"}") != "1";
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(metric(node.admin_port(), "floodgate_tls_reloads_total{result=\"ok\"}"), "1");
  TlsClient after(tls_port, dir);
  ASSERT_TRUE(after.ok());
  const std::string second = after.served_serial();
  EXPECT_NE(second, first);
  EXPECT_EQ(after.request({"INCR", "reload:n"}), ":2\r\n");
  EXPECT_EQ(before.request({"INCR", "reload:n"}), ":3\r\n");  // still open, on the old one
  EXPECT_EQ(before.served_serial(), first);

  std::ofstream(dir + "/node.key") << "not a key\n";
  kill(node.pid(), SIGHUP);
  for (int i = 0; i < 100 && metric(node.admin_port(),
                                    "floodgate_tls_reloads_total{result=\"failed\"}") != "1";
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(metric(node.admin_port(), "floodgate_tls_reloads_total{result=\"failed\"}"), "1");
  TlsClient later(tls_port, dir);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later.served_serial(), second);
  EXPECT_EQ(later.request({"PING"}), "+PONG\r\n");
  EXPECT_GE(std::stoi(metric(node.admin_port(), "floodgate_tls_handshakes_total{result=\"ok\"}")),
            3);
  // The certificate's end, for alerts: make-certs signs for 825 days.
  const double expiry =
      std::stod(metric(node.admin_port(), "floodgate_tls_certificate_expiry_timestamp_seconds"));
  EXPECT_GT(expiry, static_cast<double>(std::time(nullptr)) + 800 * 86400.0);
  EXPECT_LT(expiry, static_cast<double>(std::time(nullptr)) + 830 * 86400.0);
}

// A start with TLS files that cannot be used stops with the file and the reason.
TEST(Tls, UnusableCertificatesStopTheStartWithWhy) {
  const std::string& dir = certs();
  const std::string base = std::string(FLOODGATE_BIN) + " --port 0 --admin-port 0 --native-port 0 ";
  std::string out = run(base + "--tls-port " + std::to_string(free_port()) +
                        " --tls-cert-file /nonexistent.crt --tls-key-file " + dir +
                        "/node.key --tls-ca-cert-file " + dir + "/ca.crt 2>&1; echo rc=$?");
  EXPECT_NE(out.find("cannot use the certificate in /nonexistent.crt"), std::string::npos) << out;
  EXPECT_NE(out.find("rc=2"), std::string::npos) << out;
  out = run(base + "--tls-port " + std::to_string(free_port()) + " --tls-cert-file " + dir +
            "/node.crt --tls-key-file " + dir + "/client.key --tls-ca-cert-file " + dir +
            "/ca.crt 2>&1; echo rc=$?");
  EXPECT_NE(out.find("cannot use the private key in " + dir + "/client.key"), std::string::npos)
      << out;
  EXPECT_NE(out.find("key values mismatch"), std::string::npos) << out;
  out = run(base + "--tls-port " + std::to_string(free_port()) + " --tls-cert-file " + dir +
            "/node.crt --tls-key-file " + dir + "/node.key 2>&1; echo rc=$?");
  EXPECT_NE(out.find("tls-ca-cert-file"), std::string::npos) << out;
  EXPECT_NE(out.find("rc=2"), std::string::npos) << out;
  // A certificate that expired: every client would refuse it, so the node says so and stops.
  make_expired(dir);
  out = run(base + "--tls-port " + std::to_string(free_port()) + " --tls-cert-file " + dir +
            "/expired.crt --tls-key-file " + dir + "/expired.key --tls-ca-cert-file " + dir +
            "/ca.crt 2>&1; echo rc=$?");
  EXPECT_NE(out.find("the certificate in " + dir + "/expired.crt expired on 2020-01-31"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("rc=2"), std::string::npos) << out;
  out = run(base + "--tls-port " + std::to_string(free_port()) + " --tls-protocols TLSv9 " +
            "--tls-cert-file " + dir + "/node.crt --tls-key-file " + dir +
            "/node.key --tls-ca-cert-file " + dir + "/ca.crt 2>&1; echo rc=$?");
  EXPECT_NE(out.find("tls-protocols: unknown protocol 'TLSv9'"), std::string::npos) << out;
  EXPECT_NE(out.find("rc=2"), std::string::npos) << out;
  // --check-config reads the certificate files too.
  const std::string file = temp_file("tls.yaml", "tls-port: 6390\ntls-cert-file: " + dir +
                                                     "/missing.crt\ntls-key-file: " + dir +
                                                     "/node.key\ntls-ca-cert-file: " + dir +
                                                     "/ca.crt\ntls-auth-clients: optional\n");
  out = run(std::string(FLOODGATE_BIN) + " --check-config " + file + " 2>&1; echo rc=$?");
  EXPECT_NE(out.find("cannot use the certificate in " + dir + "/missing.crt"), std::string::npos)
      << out;
  EXPECT_NE(out.find("rc=2"), std::string::npos) << out;
  std::ofstream(file) << "tls-port: 6390\ntls-auth-clients: sometimes\n";
  out = run(std::string(FLOODGATE_BIN) + " --check-config " + file + " 2>&1; echo rc=$?");
  EXPECT_NE(out.find("tls-auth-clients (line 2): must be yes, no or optional"), std::string::npos)
      << out;
  std::remove(file.c_str());
}

// The native port with tls-native: the client library connects with TLS, checking the
// node's certificate and showing its own; without TLS, or without a certificate, it is
// refused with the reason.
TEST(Tls, TheNativeClientSpeaksTls) {
  const std::string& dir = certs();
  NodeProcess node(with({"--tls-native"}, tls_files(dir)));
  ASSERT_TRUE(node.alive());
  auto options = [&](bool tls, bool cert, const std::string& host) {
    floodgate::Client::Options o;
    o.seeds = {host + ":" + std::to_string(node.native_port())};
    o.deadline = std::chrono::milliseconds(1000);
    o.tls.enabled = tls;
    o.tls.ca_cert_file = dir + "/ca.crt";
    if (cert) {
      o.tls.cert_file = dir + "/client.crt";
      o.tls.key_file = dir + "/client.key";
    }
    return o;
  };
  const floodgate::Limit limit = floodgate::Limit::token_bucket(10, 1, 1000);
  {
    floodgate::Client c(options(true, true, "127.0.0.1"));
    auto r = c.take("native-tls", limit);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_TRUE(r->allowed);
    EXPECT_EQ(r->remaining, 9);
  }
  {
    floodgate::Client c(options(true, true, "localhost"));  // the certificate names it too
    auto r = c.take("native-tls", limit);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->remaining, 8);
  }
  {
    // (OpenSSL's alert, or — when the node's reset overtakes the alert — the client's own
    // words for a reset before any answer without a certificate: both say it)
    floodgate::Client c(options(true, false, "127.0.0.1"));
    auto r = c.take("native-tls", limit);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().find("certificate required"), std::string::npos) << r.error();
  }
  {
    floodgate::Client c(options(false, false, "127.0.0.1"));
    EXPECT_FALSE(c.take("native-tls", limit).ok());
  }
  floodgate::Client::Options bad = options(true, true, "127.0.0.1");
  bad.tls.ca_cert_file = dir + "/missing.crt";
  EXPECT_THROW(floodgate::Client c(bad), std::runtime_error);
}

}  // namespace
}  // namespace fg::testing
