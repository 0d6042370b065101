#include "cli/server_api.h"

#include <chrono>
#include <thread>

namespace lizard {

using nlohmann::json;

namespace {

Code code_of(int http_status) {
  switch (http_status) {
    case 400:
    case 401:
      return Code::kInvalidArgument;
    case 404:
      return Code::kNotFound;
    case 409:
      return Code::kConflict;
    case 413:
      return Code::kTooLarge;
    case 422:
      return Code::kCompileError;
    case 503:
      return Code::kUnavailable;
    default:
      return Code::kInternal;
  }
}

}  // namespace

Status status_of_error_answer(int http_status, const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  std::string message = body;
  if (j.is_object() && j.contains("error") && j["error"].is_string())
    message = j["error"].get<std::string>();
  while (!message.empty() && message.back() == '\n') message.pop_back();
  if (message.empty()) message = "HTTP " + std::to_string(http_status);
  if (http_status == 401) message += " (give --token or set LIZARD_TOKEN)";
  return Status(code_of(http_status), message);
}

Result<ServerApi> ServerApi::connect(const std::string& address, uint16_t port, std::string token,
                                     TlsClientOptions tls) {
  LIZARD_ASSIGN_OR_RETURN(ServerUri uri, parse_server_address(address, port, tls));
  return ServerApi(std::move(uri), std::move(token), std::move(tls));
}

std::string ServerApi::url(const std::string& path) const {
  return uri_.base_url() + path;
}

Status ServerApi::unreachable(const Status& why) const {
  return unavailable(why.message() + " (is `lizard server` running there?)");
}

Result<json> json_answer(const HttpReply& reply) {
  if (reply.status >= 300) return status_of_error_answer(reply.status, reply.body);
  json j = json::parse(reply.body, nullptr, false);
  if (j.is_discarded()) return internal_error("the server's answer is not JSON: " + reply.body);
  return j;
}

Result<HttpReply> ServerApi::send(const std::string& method, const std::string& path,
                                  const std::string& body, int timeout_s) const {
  auto r = http_request(method, url(path), body, "application/json", timeout_s, token_, tls_);
  if (!r.ok())
    return r.status().code() == Code::kUnavailable ? unreachable(r.status()) : r.status();
  return r;
}

Status ServerApi::wait_until_up(double seconds, std::ostream* note) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (bool noted = false;; noted = true) {
    auto r = http_request("GET", url("/ruok"), "", "application/json", 5, token_, tls_);
    if (r.ok()) return Status::Ok();
    const bool refused = r.status().code() == Code::kUnavailable &&
                         r.status().message().find("refused") != std::string::npos;
    if (!refused || std::chrono::steady_clock::now() >= deadline) return unreachable(r.status());
    if (!noted && note)
      *note << "waiting for the server at " << where() << " to accept connections (up to "
            << seconds << " s)\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Result<json> ServerApi::get(const std::string& path, int timeout_s) const {
  LIZARD_ASSIGN_OR_RETURN(HttpReply r, send("GET", path, "", timeout_s));
  return json_answer(r);
}

Result<json> ServerApi::post(const std::string& path, const json& body, int timeout_s) const {
  LIZARD_ASSIGN_OR_RETURN(HttpReply r, send("POST", path, body.dump(), timeout_s));
  return json_answer(r);
}

Result<json> ServerApi::del(const std::string& path, int timeout_s) const {
  LIZARD_ASSIGN_OR_RETURN(HttpReply r, send("DELETE", path, "", timeout_s));
  return json_answer(r);
}

Result<json> ServerApi::upload(const std::string& file, const std::string& format,
                               int timeout_s) const {
  const std::string path = format == "raw" ? "/datasets?format=raw" : "/datasets";
  auto r = http_upload_file("POST", url(path), file, "application/octet-stream", timeout_s, token_,
                            tls_);
  if (!r.ok())
    return r.status().code() == Code::kUnavailable ? unreachable(r.status()) : r.status();
  return json_answer(r.value());
}

Status ServerApi::download(const std::string& path, const std::string& file, int timeout_s) const {
  auto r = http_download_file(url(path), file, timeout_s, token_, tls_);
  if (!r.ok())
    return r.status().code() == Code::kUnavailable ? unreachable(r.status()) : r.status();
  if (r->status != 200) return status_of_error_answer(r->status, r->body);
  return Status::Ok();
}

}  // namespace lizard
