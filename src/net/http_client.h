// http_request: a small synchronous HTTP/1.1 client for lizard's tools and
// tests (the `lizard` user commands, load_program, benchmarks, end-to-end
// tests).
//
//   Result<HttpReply> r = http_request("POST", "http://127.0.0.1:5000/programs", body);
//   if (r.ok() && r->status == 201) ...
#pragma once

#include <string>

#include "common/status.h"

namespace lizard {

struct HttpReply {
  int status = 0;
  std::string body;
};

struct ServerUri {
  std::string host;
  std::string port;
  std::string base_path;  // without trailing '/'
};

// Accepts "http://host:port[/path]", "host:port" and "host" (port 5000).
Result<ServerUri> parse_server_uri(const std::string& uri);

// Fails (kUnavailable) only when the server cannot be reached or the
// connection breaks; any HTTP status is a successful reply.
Result<HttpReply> http_request(const std::string& method, const std::string& url,
                               const std::string& body = "",
                               const std::string& content_type = "application/json",
                               int timeout_s = 600, const std::string& bearer_token = "");

// As http_request, with the body streamed from the file at `path` in blocks,
// never held in memory whole (dataset uploads).
Result<HttpReply> http_upload_file(const std::string& method, const std::string& url,
                                   const std::string& path,
                                   const std::string& content_type = "application/octet-stream",
                                   int timeout_s = 600, const std::string& bearer_token = "");

// GET `url` into the file at `path`, written as it arrives (field
// downloads).  The file is only there after a 200; any other answer's body is
// returned in the reply instead.
Result<HttpReply> http_download_file(const std::string& url, const std::string& path,
                                     int timeout_s = 600, const std::string& bearer_token = "");

}  // namespace lizard
