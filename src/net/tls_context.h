// TLS set-up shared by the server and the clients: OpenSSL contexts made
// from the operator's files (through Boost.Asio's ssl::context), the
// verification of a server's certificate against the name dialled, and the
// message a user sees when a handshake fails.  Only translation units that
// already include Boost.Asio include this.
//
//   auto server_ctx = make_server_tls_context("cert.pem", "key.pem");  // lizard server
//   auto client_ctx = make_client_tls_context("ca.pem");   // "": the system's roots
//   MaybeTlsStream s(std::move(socket), **client_ctx);
//   if (Status st = expect_server_name(&s.tls(), "127.0.0.1"); !st.ok()) ...
//   s.tls().handshake(net::ssl::stream_base::client, ec);
//   if (ec) return unavailable(client_handshake_failure(s.tls(), ec, "127.0.0.1:5000"));
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <memory>
#include <string>

#include "common/status.h"

namespace lizard {

using TlsContext = boost::asio::ssl::context;

// The server's context: its certificate chain and private key (PEM files),
// TLS 1.2 or newer.  Fails with a message naming the file and the problem.
Result<std::shared_ptr<TlsContext>> make_server_tls_context(const std::string& cert_file,
                                                            const std::string& key_file);

// A client's context: verifies the server's certificate against the CAs in
// `ca_file` (PEM), or the system's roots when it is empty.
Result<std::shared_ptr<TlsContext>> make_client_tls_context(const std::string& ca_file);

// Makes a client stream check that the server's certificate is for `host`
// (a DNS name, checked with SNI sent, or an IP address).
Status expect_server_name(boost::asio::ssl::stream<boost::beast::tcp_stream>* stream,
                          const std::string& host);

// What went wrong in a client's failed handshake with `where` ("host:port"),
// said for a user: a certificate that did not verify and why, with what to
// pass; or a server that does not seem to speak TLS.
std::string client_handshake_failure(boost::asio::ssl::stream<boost::beast::tcp_stream>& stream,
                                     const boost::system::error_code& ec, const std::string& where);

// Whether a server's failed handshake was a plain HTTP request sent to the
// TLS port (answered in plain HTTP by the caller, so the user sees why).
bool is_plain_http_on_tls_port(const boost::system::error_code& ec);

}  // namespace lizard
