// The only library translation unit with Beast's HTTP client.
#include "net/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

namespace lizard {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

Result<ServerUri> parse_server_uri(const std::string& uri) {
  std::string rest = uri;
  if (rest.rfind("http://", 0) == 0)
    rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos)
    return invalid_argument("unsupported scheme in '" + uri + "' (use http://host:port)");
  ServerUri out;
  std::string hostport = rest;
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    hostport = rest.substr(0, slash);
    out.base_path = rest.substr(slash);
    while (!out.base_path.empty() && out.base_path.back() == '/') out.base_path.pop_back();
  }
  if (hostport.empty()) return invalid_argument("no host in '" + uri + "'");
  if (auto colon = hostport.rfind(':'); colon != std::string::npos) {
    out.host = hostport.substr(0, colon);
    out.port = hostport.substr(colon + 1);
  } else {
    out.host = hostport;
    out.port = "5000";
  }
  return out;
}

namespace {

template <class Body>
void set_common_fields(http::request<Body>* req, const ServerUri& u, const std::string& token) {
  req->set(http::field::host, u.host + ":" + u.port);
  req->set(http::field::user_agent, "lizard/" LIZARD_VERSION);
  if (!token.empty()) req->set(http::field::authorization, "Bearer " + token);
}

HttpReply read_reply(beast::tcp_stream& stream) {
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(uint64_t{1} << 34);
  http::read(stream, buffer, parser);
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  return HttpReply{static_cast<int>(parser.get().result_int()), std::move(parser.get().body())};
}

std::string target_of(const ServerUri& u) {
  return u.base_path.empty() ? "/" : u.base_path;
}

// Connects to the server; every operation on the stream then has `timeout_s`.
void connect(beast::tcp_stream* stream, const ServerUri& u, int timeout_s) {
  tcp::resolver resolver(stream->get_executor());
  stream->expires_after(std::chrono::seconds(timeout_s));
  stream->connect(resolver.resolve(u.host, u.port));
}

// The error for a failed exchange: Asio's errors by their message alone
// ("Connection refused"), without where in Asio they were raised.
Status unreachable(const ServerUri& u, const std::exception& e) {
  const auto* system = dynamic_cast<const boost::system::system_error*>(&e);
  return unavailable("cannot reach " + u.host + ":" + u.port + ": " +
                     (system ? system->code().message() : std::string(e.what())));
}

}  // namespace

Result<HttpReply> http_request(const std::string& method, const std::string& url,
                               const std::string& body, const std::string& content_type,
                               int timeout_s, const std::string& bearer_token) {
  LIZARD_ASSIGN_OR_RETURN(ServerUri u, parse_server_uri(url));
  try {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    connect(&stream, u, timeout_s);
    http::request<http::string_body> req(http::string_to_verb(method), target_of(u), 11);
    set_common_fields(&req, u, bearer_token);
    if (!body.empty() || method == "POST") {
      req.set(http::field::content_type, content_type);
      req.body() = body;
    }
    req.prepare_payload();
    http::write(stream, req);
    return read_reply(stream);
  } catch (const std::exception& e) {
    return unreachable(u, e);
  }
}

Result<HttpReply> http_upload_file(const std::string& method, const std::string& url,
                                   const std::string& path, const std::string& content_type,
                                   int timeout_s, const std::string& bearer_token) {
  LIZARD_ASSIGN_OR_RETURN(ServerUri u, parse_server_uri(url));
  std::ifstream in(path, std::ios::binary);
  std::error_code size_error;
  const uint64_t size = std::filesystem::file_size(path, size_error);
  if (!in || size_error) return not_found("cannot read " + path);
  try {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    connect(&stream, u, timeout_s);
    http::request<http::empty_body> req(http::string_to_verb(method), target_of(u), 11);
    set_common_fields(&req, u, bearer_token);
    req.set(http::field::content_type, content_type);
    req.set(http::field::content_length, std::to_string(size));
    http::request_serializer<http::empty_body> header(req);
    http::write_header(stream, header);
    std::vector<char> block(size_t{4} << 20);
    for (uint64_t sent = 0; sent < size;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), size - sent));
      if (!in.read(block.data(), static_cast<std::streamsize>(n)))
        return invalid_argument(path + ": short read at byte " + std::to_string(sent));
      net::write(stream, net::buffer(block.data(), n));
      sent += n;
    }
    return read_reply(stream);
  } catch (const std::exception& e) {
    return unreachable(u, e);
  }
}

Result<HttpReply> http_download_file(const std::string& url, const std::string& path, int timeout_s,
                                     const std::string& bearer_token) {
  LIZARD_ASSIGN_OR_RETURN(ServerUri u, parse_server_uri(url));
  const std::string part = path + ".part";
  try {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    connect(&stream, u, timeout_s);
    http::request<http::empty_body> req(http::verb::get, target_of(u), 11);
    set_common_fields(&req, u, bearer_token);
    http::write(stream, req);
    http::response_parser<http::file_body> parser;
    parser.body_limit(boost::none);
    beast::error_code ec;
    parser.get().body().open(part.c_str(), beast::file_mode::write, ec);
    if (ec) return internal_error("cannot write " + part + ": " + ec.message());
    beast::flat_buffer buffer;
    http::read(stream, buffer, parser);
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    parser.get().body().close();
    HttpReply reply{static_cast<int>(parser.get().result_int()), ""};
    if (reply.status == 200) {
      std::error_code moved;
      std::filesystem::rename(part, path, moved);
      if (moved) return internal_error("cannot write " + path + ": " + moved.message());
      return reply;
    }
    std::ifstream in(part, std::ios::binary);
    reply.body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::remove(part.c_str());
    return reply;
  } catch (const std::exception& e) {
    std::remove(part.c_str());
    return unreachable(u, e);
  }
}

}  // namespace lizard
