// Building the OpenSSL contexts from the configured files.
#include "tls_context.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdio>
#include <ctime>
#include <sstream>

namespace fg {

bool parse_tls_auth_clients(const std::string& text, TlsAuthClients& out) {
  if (text == "yes") {
    out = TlsAuthClients::kYes;
  } else if (text == "no") {
    out = TlsAuthClients::kNo;
  } else if (text == "optional") {
    out = TlsAuthClients::kOptional;
  } else {
    return false;
  }
  return true;
}

namespace {

std::string utc_date(int64_t s) {
  const std::time_t t = static_cast<std::time_t>(s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string openssl_reason() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// The versions named in `protocols` ("TLSv1.2 TLSv1.3"), as a min and max; false if a word
// is not one.
Status protocol_range(const std::string& protocols, int& lo, int& hi) {
  lo = 0;
  hi = 0;
  std::istringstream in(protocols.empty() ? "TLSv1.2 TLSv1.3" : protocols);
  for (std::string w; in >> w;) {
    int v = 0;
    if (w == "TLSv1") v = TLS1_VERSION;
    if (w == "TLSv1.1") v = TLS1_1_VERSION;
    if (w == "TLSv1.2") v = TLS1_2_VERSION;
    if (w == "TLSv1.3") v = TLS1_3_VERSION;
    if (v == 0) {
      return Error{"tls-protocols: unknown protocol '" + w +
                   "' (TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)"};
    }
    lo = lo == 0 ? v : std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo == 0) {
    return Error{"tls-protocols: no protocol named"};
  }
  return {};
}

// What both contexts share: protocols, ciphers, the CAs, a certificate and its key.
Status configure(asio::ssl::context& ctx, const TlsFiles& f, const std::string& cert,
                 const std::string& key) {
  SSL_CTX* c = ctx.native_handle();
  int lo = 0, hi = 0;
  if (Status st = protocol_range(f.protocols, lo, hi); !st) return st;
  SSL_CTX_set_min_proto_version(c, lo);
  SSL_CTX_set_max_proto_version(c, hi);
  SSL_CTX_set_options(c, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (f.prefer_server_ciphers) SSL_CTX_set_options(c, SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (!f.ciphers.empty() && SSL_CTX_set_cipher_list(c, f.ciphers.c_str()) != 1) {
    return Error{"tls-ciphers: " + openssl_reason()};
  }
  if (!f.ciphersuites.empty() && SSL_CTX_set_ciphersuites(c, f.ciphersuites.c_str()) != 1) {
    return Error{"tls-ciphersuites: " + openssl_reason()};
  }
  if (!f.key_file_pass.empty()) {
    ctx.set_password_callback(
        [pass = f.key_file_pass](size_t, asio::ssl::context::password_purpose) { return pass; });
  }
  if (SSL_CTX_use_certificate_chain_file(c, cert.c_str()) != 1) {
    return Error{"cannot use the certificate in " + cert + ": " + openssl_reason()};
  }
  // (a key that is not the certificate's is refused here: "key values mismatch")
  if (SSL_CTX_use_PrivateKey_file(c, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Error{"cannot use the private key in " + key + ": " + openssl_reason()};
  }
  if (!f.ca_cert_file.empty() || !f.ca_cert_dir.empty()) {
    if (SSL_CTX_load_verify_locations(c, f.ca_cert_file.empty() ? nullptr : f.ca_cert_file.c_str(),
                                      f.ca_cert_dir.empty() ? nullptr : f.ca_cert_dir.c_str()) !=
        1) {
      return Error{"cannot load the CA certificates in " +
                   (f.ca_cert_file.empty() ? f.ca_cert_dir : f.ca_cert_file) + ": " +
                   openssl_reason()};
    }
  }
  return {};
}

// ALPN: "h2" when the client offers it; else no protocol agreed (the handshake goes on).
int select_h2(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
              unsigned int inlen, void*) {
  static const unsigned char kH2[] = {2, 'h', '2'};
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kH2, sizeof kH2, in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

Status TlsContexts::load(const TlsFiles& f) {
  if (f.cert_file.empty() || f.key_file.empty()) {
    return Error{"TLS needs both tls-cert-file and tls-key-file"};
  }
  if (f.ca_cert_file.empty() && f.ca_cert_dir.empty()) {
    return Error{
        "TLS needs tls-ca-cert-file or tls-ca-cert-dir (the CA that signs clients and peers)"};
  }
  // A certificate outside its validity would be refused by every client and peer: say so
  // now rather than at each handshake (the usual outage: a certificate that expired).
  int64_t not_before = 0, not_after = 0;
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  if (certificate_validity(f.cert_file, not_before, not_after)) {
    if (now >= not_after) {
      return Error{"the certificate in " + f.cert_file + " expired on " + utc_date(not_after)};
    }
    if (now < not_before) {
      return Error{"the certificate in " + f.cert_file + " is not valid before " +
                   utc_date(not_before)};
    }
  }
  ERR_clear_error();
  try {
    std::shared_ptr<asio::ssl::context> server, h2_server;
    for (auto* out : {&server, &h2_server}) {
      auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
      if (Status st = configure(*ctx, f, f.cert_file, f.key_file); !st) return st;
      const char sid[] = "floodgate";
      SSL_CTX_set_session_id_context(ctx->native_handle(),
                                     reinterpret_cast<const unsigned char*>(sid), sizeof sid - 1);
      switch (f.auth_clients) {
        case TlsAuthClients::kYes:
          ctx->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
          break;
        case TlsAuthClients::kOptional:
          ctx->set_verify_mode(asio::ssl::verify_peer);
          break;
        case TlsAuthClients::kNo:
          ctx->set_verify_mode(asio::ssl::verify_none);
          break;
      }
      *out = std::move(ctx);
    }
    SSL_CTX_set_alpn_select_cb(h2_server->native_handle(), select_h2, nullptr);
    auto client = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    if (Status st =
            configure(*client, f, f.client_cert_file.empty() ? f.cert_file : f.client_cert_file,
                      f.client_key_file.empty() ? f.key_file : f.client_key_file);
        !st) {
      return st;
    }
    client->set_verify_mode(asio::ssl::verify_peer);
    std::lock_guard<std::mutex> lock(mu_);
    server_ = std::move(server);
    h2_server_ = std::move(h2_server);
    client_ = std::move(client);
    files_ = f;
    expires_at_s_.store(not_after, std::memory_order_relaxed);
    return {};
  } catch (const std::exception& e) {
    return Error{std::string("TLS: ") + e.what()};
  }
}

bool TlsContexts::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_ != nullptr;
}

std::shared_ptr<asio::ssl::context> TlsContexts::server() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_;
}

std::shared_ptr<asio::ssl::context> TlsContexts::h2_server() const {
  std::lock_guard<std::mutex> lock(mu_);
  return h2_server_;
}

std::shared_ptr<asio::ssl::context> TlsContexts::client() const {
  std::lock_guard<std::mutex> lock(mu_);
  return client_;
}

namespace {
// The first certificate in a PEM file (null if unreadable); X509_free it.
X509* read_certificate(const std::string& pem_file) {
  FILE* fp = std::fopen(pem_file.c_str(), "r");
  if (!fp) return nullptr;
  X509* cert = PEM_read_X509(fp, nullptr, nullptr, nullptr);
  std::fclose(fp);
  if (!cert) ERR_clear_error();
  return cert;
}
}  // namespace

bool certificate_validity(const std::string& pem_file, int64_t& not_before_s,
                          int64_t& not_after_s) {
  X509* cert = read_certificate(pem_file);
  if (!cert) return false;
  auto seconds = [](const ASN1_TIME* t, int64_t& out) {
    std::tm tm{};
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return false;
    out = static_cast<int64_t>(timegm(&tm));
    return true;
  };
  const bool ok = seconds(X509_get0_notBefore(cert), not_before_s) &&
                  seconds(X509_get0_notAfter(cert), not_after_s);
  X509_free(cert);
  return ok;
}

std::string describe_certificate(const std::string& pem_file) {
  X509* cert = read_certificate(pem_file);
  if (!cert) return "(unreadable)";
  char subject[256];
  X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof subject);
  X509_free(cert);
  int64_t from = 0, until = 0;
  std::string out = subject;
  if (certificate_validity(pem_file, from, until)) out += ", expires " + utc_date(until);
  return out;
}

std::string tls_error_text(const asio::error_code& ec) {
  if (ec.category() == asio::error::get_ssl_category()) {
    char buf[256];
    ERR_error_string_n(static_cast<unsigned long>(ec.value()), buf, sizeof buf);
    return buf;
  }
  if (ec == asio::ssl::error::stream_truncated) return "the peer closed without a TLS close";
  return ec.message();
}

}  // namespace fg
