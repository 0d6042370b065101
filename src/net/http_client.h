// http_request: a small synchronous HTTP/1.1 client for lizard's tools and
// tests (the `lizard` user commands, load_program, benchmarks, end-to-end
// tests), over plain TCP or TLS (https://, verified: net/tls_options.h).
//
//   Result<HttpReply> r = http_request("POST", "http://127.0.0.1:5000/programs", body);
//   if (r.ok() && r->status == 201) ...
//   r = http_request("GET", "https://head:5000/runtimes", "", "", 30, token, {true, "ca.pem"});
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "net/tls_options.h"

namespace lizard {

struct HttpReply {
  int status = 0;
  std::string body;
};

struct ServerUri {
  std::string scheme;  // "http" or "https" (ws:// and wss:// say the same); "" when none was given
  std::string host;
  std::string port;
  std::string base_path;  // without trailing '/'

  bool tls() const { return scheme == "https"; }
  // "https://host:port/base", or http://.
  std::string base_url() const;
};

// Accepts "http://host:port[/path]" (https://, ws://, wss:// too), "host:port"
// and "host" (port 5000).
Result<ServerUri> parse_server_uri(const std::string& uri);

// A server address as the command line takes it: a host, host:port or a URI
// (a port in it wins over `default_port`).  With no scheme in it, the scheme
// is https when `tls.enabled` or a CA file is given, else http; --tls with an
// http:// address is an error.
Result<ServerUri> parse_server_address(const std::string& address, uint16_t default_port,
                                       const TlsClientOptions& tls);

// Fails only when the server cannot be reached or the connection breaks
// (kUnavailable), or when an https:// handshake fails (kInvalidArgument: the
// server's certificate is refused, or the server does not speak TLS); any
// HTTP status is a successful reply.  `tls` says which CAs to trust.  The
// whole exchange takes at most `timeout_s`: a server that has not answered
// by then is left ("no answer from HOST:PORT within N s", kUnavailable).
Result<HttpReply> http_request(const std::string& method, const std::string& url,
                               const std::string& body = "",
                               const std::string& content_type = "application/json",
                               int timeout_s = 600, const std::string& bearer_token = "",
                               const TlsClientOptions& tls = {});

// As http_request, with the body streamed from the file at `path` in blocks,
// never held in memory whole (dataset uploads).
Result<HttpReply> http_upload_file(const std::string& method, const std::string& url,
                                   const std::string& path,
                                   const std::string& content_type = "application/octet-stream",
                                   int timeout_s = 600, const std::string& bearer_token = "",
                                   const TlsClientOptions& tls = {});

// GET `url` into the file at `path`, written as it arrives (field
// downloads).  The file is only there after a 200; any other answer's body is
// returned in the reply instead.
Result<HttpReply> http_download_file(const std::string& url, const std::string& path,
                                     int timeout_s = 600, const std::string& bearer_token = "",
                                     const TlsClientOptions& tls = {});

}  // namespace lizard
