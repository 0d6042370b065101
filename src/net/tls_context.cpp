#include "net/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>

#include <fstream>

namespace lizard {

namespace ssl = boost::asio::ssl;

namespace {

// The file can be opened, or why not ("--tls-cert x.pem: cannot read it").
Status readable(const std::string& flag, const std::string& path) {
  if (path.empty()) return invalid_argument(flag + " is empty");
  std::ifstream in(path);
  if (!in) return invalid_argument(flag + " " + path + ": cannot read it");
  return Status::Ok();
}

// OpenSSL's reason for the last failure, without its library prefix.
std::string openssl_reason(const boost::system::error_code& ec) {
  if (ec.category() == boost::asio::error::get_ssl_category()) {
    const char* reason = ERR_reason_error_string(static_cast<unsigned long>(ec.value()));
    if (reason) return reason;
  }
  return ec.message();
}

}  // namespace

Result<std::shared_ptr<TlsContext>> make_server_tls_context(const std::string& cert_file,
                                                            const std::string& key_file) {
  LIZARD_RETURN_IF_ERROR(readable("--tls-cert", cert_file));
  LIZARD_RETURN_IF_ERROR(readable("--tls-key", key_file));
  auto ctx = std::make_shared<TlsContext>(ssl::context::tls_server);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::single_dh_use, ec);
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec)
    return invalid_argument("--tls-cert " + cert_file + ": not a PEM certificate chain (" +
                            openssl_reason(ec) + ")");
  ctx->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec)
    return invalid_argument("--tls-key " + key_file + ": not a PEM private key (" +
                            openssl_reason(ec) + ")");
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    ERR_clear_error();
    return invalid_argument("--tls-key " + key_file + " is not the key of the certificate in " +
                            cert_file);
  }
  return ctx;
}

Result<std::shared_ptr<TlsContext>> make_client_tls_context(const std::string& ca_file) {
  auto ctx = std::make_shared<TlsContext>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  ctx->set_verify_mode(ssl::verify_peer, ec);
  if (ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) return internal_error("TLS: cannot load the system's CA certificates: " + ec.message());
    return ctx;
  }
  LIZARD_RETURN_IF_ERROR(readable("--tls-ca", ca_file));
  ctx->load_verify_file(ca_file, ec);
  if (ec)
    return invalid_argument("--tls-ca " + ca_file + ": not a PEM certificate (" +
                            openssl_reason(ec) + ")");
  return ctx;
}

Status expect_server_name(ssl::stream<boost::beast::tcp_stream>* stream, const std::string& host) {
  SSL* s = stream->native_handle();
  boost::system::error_code not_ip;
  boost::asio::ip::make_address(host, not_ip);
  if (!not_ip) {
    // An address: the certificate must list it (subjectAltName IP).
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), host.c_str()) != 1)
      return invalid_argument("TLS: cannot check the certificate against " + host);
    return Status::Ok();
  }
  if (SSL_set_tlsext_host_name(s, host.c_str()) != 1 || SSL_set1_host(s, host.c_str()) != 1)
    return invalid_argument("TLS: cannot check the certificate against " + host);
  return Status::Ok();
}

std::string client_handshake_failure(ssl::stream<boost::beast::tcp_stream>& stream,
                                     const boost::system::error_code& ec,
                                     const std::string& where) {
  const long verify = SSL_get_verify_result(stream.native_handle());
  if (verify != X509_V_OK) {
    std::string m = "TLS: certificate verify failed for " + where + " (" +
                    X509_verify_cert_error_string(verify) + ")";
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH)
      return m +
             "; the server's certificate is not for this address: connect by a name or "
             "address it lists, or give the server a certificate for this one";
    if (verify == X509_V_ERR_CERT_HAS_EXPIRED || verify == X509_V_ERR_CERT_NOT_YET_VALID)
      return m + "; the server needs a certificate valid now";
    return m + "; pass --tls-ca with the CA that signed the server's certificate";
  }
  return "TLS handshake with " + where + " failed (" + openssl_reason(ec) +
         "); does the server serve TLS? It needs --tls-cert and --tls-key";
}

bool is_plain_http_on_tls_port(const boost::system::error_code& ec) {
  return ec.category() == boost::asio::error::get_ssl_category() &&
         ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_HTTP_REQUEST;
}

}  // namespace lizard
