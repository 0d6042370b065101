// ServerApi: a lizard server's REST API as the command line uses it.  Every
// call sends the bearer token, parses the JSON answer, and turns an error
// answer into a Status that carries the server's own message, so that it
// can be printed as it is.
//
//   auto api = ServerApi::connect("head:5000", 5000, token);
//   auto api = ServerApi::connect("https://head:5000", 5000, token, {false, "ca.pem"});
//   Result<nlohmann::json> runs = api->get("/runtimes");
//   if (!runs.ok()) std::cerr << "lizard: " << runs.status().message() << "\n";
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>

#include "common/status.h"
#include "net/http_client.h"

namespace lizard {

class ServerApi {
 public:
  // `address` is a host ("head"), host:port, or http(s)://host:port[/prefix];
  // a port in it wins over `port`.  `tls` asks for TLS where the address has
  // no scheme, and says which CAs to trust (parse_server_address).
  static Result<ServerApi> connect(const std::string& address, uint16_t port, std::string token,
                                   TlsClientOptions tls = {});
  ServerApi(ServerUri uri, std::string token, TlsClientOptions tls = {})
      : uri_(std::move(uri)), token_(std::move(token)), tls_(std::move(tls)) {}

  // "host:port", for messages.
  std::string where() const { return uri_.host + ":" + uri_.port; }
  // The absolute URL of `path` (which starts with '/').
  std::string url(const std::string& path) const;

  // Waits until the server accepts connections: while they are refused (a
  // server that is still starting), tries again every 100 ms for up to
  // `seconds`, writing one line to `note` (when given) at the first
  // refusal.  Any answer, even an error, means it is up; other failures
  // (no such host, a timeout) end the wait at once.
  Status wait_until_up(double seconds, std::ostream* note) const;

  // The plain HTTP answer; fails only when the server cannot be reached.
  Result<HttpReply> send(const std::string& method, const std::string& path,
                         const std::string& body, int timeout_s) const;
  Result<nlohmann::json> get(const std::string& path, int timeout_s = 30) const;
  Result<nlohmann::json> post(const std::string& path, const nlohmann::json& body,
                              int timeout_s = 600) const;
  Result<nlohmann::json> del(const std::string& path, int timeout_s = 30) const;
  // POST /datasets with the file as the body (`format` "npy" or "raw").
  Result<nlohmann::json> upload(const std::string& file, const std::string& format,
                                int timeout_s = 6 * 3600) const;
  // GET `path` into `file`.
  Status download(const std::string& path, const std::string& file, int timeout_s = 3600) const;

 private:
  Status unreachable(const Status& why) const;

  ServerUri uri_;
  std::string token_;
  TlsClientOptions tls_;
};

// The JSON of an answer, or the Status of an error answer.
Result<nlohmann::json> json_answer(const HttpReply& reply);

// The Status for an error answer: the server's {"error": ...} message (or the
// body), with a hint for 401s; its code follows the HTTP status.
Status status_of_error_answer(int http_status, const std::string& body);

}  // namespace lizard
