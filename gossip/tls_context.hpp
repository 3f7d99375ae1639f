// TLS for the node: the certificate, key and certificate authorities read from PEM files
// into two OpenSSL contexts — one that accepts (the client doors, the peer-link server) and
// one that connects (peer links to other nodes) — replaced whole when the files are read
// again (SIGHUP). A connection keeps the context it started with, so a reload drops no one.
//
// Lives with the peer links, the lowest layer that needs it; the node's doors use it too.
#pragma once
#include <asio/ssl.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "result.hpp"

namespace fg {

// Whether a client must show a certificate signed by the CA (Redis's tls-auth-clients).
enum class TlsAuthClients { kYes, kNo, kOptional };

// "yes" | "no" | "optional" (as redis.conf); false if none of those.
bool parse_tls_auth_clients(const std::string& text, TlsAuthClients& out);

struct TlsFiles {
  std::string cert_file;  // this node's certificate (chain), PEM
  std::string key_file;   // its private key, PEM
  std::string key_file_pass;
  std::string client_cert_file;  // for connecting to peers; default: cert_file
  std::string client_key_file;   // default: key_file
  std::string ca_cert_file;      // CAs that sign clients' and peers' certificates
  std::string ca_cert_dir;
  TlsAuthClients auth_clients = TlsAuthClients::kYes;
  std::string protocols;     // "TLSv1.2 TLSv1.3" (the default: both)
  std::string ciphers;       // TLS 1.2 cipher list (OpenSSL's syntax); empty: OpenSSL's default
  std::string ciphersuites;  // TLS 1.3 suites; empty: OpenSSL's default
  bool prefer_server_ciphers = false;
  bool configured() const { return !cert_file.empty() || !key_file.empty(); }
};

struct TlsCounters {
  std::atomic<uint64_t> handshakes{0};          // completed, every door and link
  std::atomic<uint64_t> handshake_failures{0};  // refused or broken off
  std::atomic<uint64_t> reloads{0};
  std::atomic<uint64_t> reload_failures{0};
};

class TlsContexts {
 public:
  // Reads the files into new contexts; or why not, naming the file and OpenSSL's reason,
  // when one is missing or bad (the contexts in force stay).
  Status load(const TlsFiles& files);
  bool active() const;
  // The contexts in force (null before the first load). Each new connection takes one.
  std::shared_ptr<asio::ssl::context> server() const;
  std::shared_ptr<asio::ssl::context> client() const;
  // The server context for HTTP/2 (the gateway door): the same, and ALPN "h2" chosen when
  // the client offers it (gRPC clients refuse a TLS connection that does not agree on it).
  std::shared_ptr<asio::ssl::context> h2_server() const;
  const TlsFiles& files() const { return files_; }
  // When the certificate in force stops being valid (Unix seconds; 0 before a load).
  int64_t expires_at_s() const { return expires_at_s_.load(std::memory_order_relaxed); }
  TlsCounters counters;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<asio::ssl::context> server_, client_, h2_server_;
  TlsFiles files_;
  std::atomic<int64_t> expires_at_s_{0};
};

// The certificate's subject and expiry ("CN=node-1, expires 2027-11-24") for the log.
std::string describe_certificate(const std::string& pem_file);

// The validity of the first certificate in a PEM file, in Unix seconds; false if unreadable.
bool certificate_validity(const std::string& pem_file, int64_t& not_before_s, int64_t& not_after_s);

// Why a TLS operation failed, in OpenSSL's words where it has them.
std::string tls_error_text(const asio::error_code& ec);

}  // namespace fg
