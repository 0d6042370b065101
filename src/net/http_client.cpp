// The only library translation unit with Beast's HTTP client.
#include "net/http_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/owned_fd.h"
#include "common/write_fully.h"
#include "net/maybe_tls_stream.h"
#include "net/tls_context.h"

namespace lizard {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

Result<ServerUri> parse_server_uri(const std::string& uri) {
  ServerUri out;
  std::string rest = uri;
  if (auto sep = rest.find("://"); sep != std::string::npos) {
    const std::string scheme = rest.substr(0, sep);
    if (scheme == "http" || scheme == "ws")
      out.scheme = "http";
    else if (scheme == "https" || scheme == "wss")
      out.scheme = "https";
    else
      return invalid_argument("unsupported scheme in '" + uri +
                              "' (use http://host:port or https://host:port)");
    rest = rest.substr(sep + 3);
  }
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

std::string ServerUri::base_url() const {
  return (tls() ? "https://" : "http://") + host + ":" + port + base_path;
}

Result<ServerUri> parse_server_address(const std::string& address, uint16_t default_port,
                                       const TlsClientOptions& tls) {
  if (address.empty()) return invalid_argument("--address is empty");
  const bool has_port =
      address.find("://") != std::string::npos || address.find(':') != std::string::npos;
  LIZARD_ASSIGN_OR_RETURN(
      ServerUri uri,
      parse_server_uri(has_port ? address : address + ":" + std::to_string(default_port)));
  if (uri.scheme == "http" && tls.enabled)
    return invalid_argument("--tls and the http:// address '" + address +
                            "' disagree (use https://)");
  if (uri.scheme.empty()) uri.scheme = tls.enabled || !tls.ca_file.empty() ? "https" : "http";
  return uri;
}

namespace {

// Ends the connection.  A TLS connection is closed without waiting for the
// server's close_notify: the reply has been read whole by then.
void close(MaybeTlsStream& stream) {
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream.socket().close(ec);
}

template <class Body>
void set_common_fields(http::request<Body>* req, const ServerUri& u, const std::string& token) {
  req->set(http::field::host, u.host + ":" + u.port);
  req->set(http::field::user_agent, "lizard/" LIZARD_VERSION);
  if (!token.empty()) req->set(http::field::authorization, "Bearer " + token);
}

HttpReply read_reply(MaybeTlsStream& stream) {
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(uint64_t{1} << 34);
  http::read(stream, buffer, parser);
  close(stream);
  return HttpReply{static_cast<int>(parser.get().result_int()), std::move(parser.get().body())};
}

std::string target_of(const ServerUri& u) {
  return u.base_path.empty() ? "/" : u.base_path;
}

// The error for a failed exchange: Asio's errors by their message alone
// ("Connection refused"), without where in Asio they were raised.
Status unreachable(const ServerUri& u, const std::exception& e) {
  const auto* system = dynamic_cast<const boost::system::system_error*>(&e);
  return unavailable("cannot reach " + u.host + ":" + u.port + ": " +
                     (system ? system->code().message() : std::string(e.what())));
}

// Connects to the server, and for https:// makes the TLS handshake with the
// server's certificate verified; every asynchronous operation on the stream
// then has `timeout_s`.
Result<MaybeTlsStream> connect(net::io_context& ioc, const ServerUri& u, int timeout_s,
                               const TlsClientOptions& tls) {
  std::shared_ptr<TlsContext> context;
  if (u.tls()) {
    LIZARD_ASSIGN_OR_RETURN(context, make_client_tls_context(tls.ca_file));
  }
  try {
    beast::tcp_stream tcp_stream(ioc);
    tcp::resolver resolver(ioc);
    tcp_stream.expires_after(std::chrono::seconds(timeout_s));
    tcp_stream.connect(resolver.resolve(u.host, u.port));
    if (!context) return MaybeTlsStream(tcp_stream.release_socket());
    MaybeTlsStream stream(tcp_stream.release_socket(), *context);
    stream.expires_after(std::chrono::seconds(timeout_s));
    LIZARD_RETURN_IF_ERROR(expect_server_name(&stream.tls(), u.host));
    beast::error_code ec;
    stream.tls().handshake(net::ssl::stream_base::client, ec);
    if (ec)
      return invalid_argument(client_handshake_failure(stream.tls(), ec, u.host + ":" + u.port));
    return stream;
  } catch (const std::exception& e) {
    return unreachable(u, e);
  }
}

// Sends `req` and reads the reply, both done by `deadline`.  Asynchronous
// operations, as only those heed the stream's expiry: a server that takes
// its request and never answers is left at the deadline.
Result<HttpReply> exchange(net::io_context& ioc, MaybeTlsStream& stream,
                           http::request<http::string_body>& req, const ServerUri& u,
                           std::chrono::steady_clock::time_point deadline, int timeout_s) {
  beast::error_code ec;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(uint64_t{1} << 34);
  stream.expires_after(std::max(std::chrono::steady_clock::duration::zero(),
                                deadline - std::chrono::steady_clock::now()));
  http::async_write(stream, req, [&](beast::error_code written, size_t) {
    if (written) {
      ec = written;
      return;
    }
    http::async_read(stream, buffer, parser, [&](beast::error_code read, size_t) { ec = read; });
  });
  ioc.restart();
  ioc.run();
  close(stream);
  if (ec == beast::error::timeout)
    return unavailable("no answer from " + u.host + ":" + u.port + " within " +
                       std::to_string(timeout_s) + " s");
  if (ec) return unavailable("cannot reach " + u.host + ":" + u.port + ": " + ec.message());
  return HttpReply{static_cast<int>(parser.get().result_int()), std::move(parser.get().body())};
}

// The file's first `size` bytes to a plain TCP socket by sendfile(2): the
// kernel copies them from the page cache, none pass through a buffer here.
// Each stall may last `timeout_s`.  *unsupported when the kernel cannot
// send this file so (nothing was sent: the caller copies instead).
Status send_file_plain(int sock, int fd, uint64_t size, int timeout_s, const std::string& path,
                       bool* unsupported) {
  *unsupported = false;
  off_t offset = 0;
  while (static_cast<uint64_t>(offset) < size) {
    const size_t want = static_cast<size_t>(
        std::min<uint64_t>(size - static_cast<uint64_t>(offset), uint64_t{1} << 30));
    const ssize_t n = ::sendfile(sock, fd, &offset, want);
    if (n > 0) continue;
    if (n == 0) return invalid_argument(path + ": short read at byte " + std::to_string(offset));
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{sock, POLLOUT, 0};
      const int ready = ::poll(&p, 1, timeout_s * 1000);
      if (ready == 0)
        return unavailable("the server took no bytes for " + std::to_string(timeout_s) + " s");
      if (ready < 0 && errno != EINTR)
        return unavailable(std::string("poll: ") + std::strerror(errno));
      continue;
    }
    if (offset == 0 && (errno == EINVAL || errno == ENOSYS)) {
      *unsupported = true;
      return Status::Ok();
    }
    return unavailable("sending " + path + " failed: " + std::strerror(errno));
  }
  return Status::Ok();
}

// The file's first `size` bytes, read here in large blocks and written to `stream`.
template <typename Stream>
Status send_file_copied(Stream& stream, int fd, uint64_t size, const std::string& path) {
  std::vector<char> block(size_t{4} << 20);
  for (uint64_t sent = 0; sent < size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(block.size(), size - sent));
    const ssize_t n = ::pread(fd, block.data(), want, static_cast<off_t>(sent));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return invalid_argument(path + ": short read at byte " + std::to_string(sent));
    net::write(stream, net::buffer(block.data(), static_cast<size_t>(n)));
    sent += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// `size` bytes to `fd` (common/write_fully.h: in pieces the page cache takes fast).
Status write_in_pieces(int fd, const char* data, size_t size, const std::string& path) {
  if (int err = write_fully(fd, data, size))
    return internal_error("cannot write " + path + ": " + std::strerror(err));
  return Status::Ok();
}

// An answer's body of `length` bytes into the file at `path`: those read
// with the header first, then read in 4 MiB blocks.
template <typename Stream>
Status receive_to_file(Stream& stream, beast::flat_buffer& buffer, uint64_t length,
                       const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return internal_error("cannot write " + path + ": " + std::strerror(errno));
  const size_t have = static_cast<size_t>(std::min<uint64_t>(buffer.size(), length));
  Status st = write_in_pieces(fd, static_cast<const char*>(buffer.data().data()), have, path);
  std::vector<char> block(size_t{4} << 20);
  for (uint64_t left = length - have; st.ok() && left > 0;) {
    beast::error_code ec;
    const size_t n = stream.read_some(
        net::buffer(block.data(), static_cast<size_t>(std::min<uint64_t>(block.size(), left))), ec);
    if (ec) {
      st =
          unavailable("the answer ended " + std::to_string(left) + " bytes early: " + ec.message());
      break;
    }
    st = write_in_pieces(fd, block.data(), n, path);
    left -= n;
  }
  if (::close(fd) != 0 && st.ok())
    st = internal_error("cannot write " + path + ": " + std::strerror(errno));
  return st;
}

Status write_whole_file(const std::string& path, const std::string& bytes) {
  const OwnedFd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (out.get() < 0) return internal_error("cannot write " + path + ": " + std::strerror(errno));
  return write_in_pieces(out.get(), bytes.data(), bytes.size(), path);
}

}  // namespace

Result<HttpReply> http_request(const std::string& method, const std::string& url,
                               const std::string& body, const std::string& content_type,
                               int timeout_s, const std::string& bearer_token,
                               const TlsClientOptions& tls) {
  LIZARD_ASSIGN_OR_RETURN(ServerUri u, parse_server_uri(url));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  net::io_context ioc;
  try {
    LIZARD_ASSIGN_OR_RETURN(MaybeTlsStream stream, connect(ioc, u, timeout_s, tls));
    http::request<http::string_body> req(http::string_to_verb(method), target_of(u), 11);
    set_common_fields(&req, u, bearer_token);
    if (!body.empty() || method == "POST") {
      req.set(http::field::content_type, content_type);
      req.body() = body;
    }
    req.prepare_payload();
    return exchange(ioc, stream, req, u, deadline, timeout_s);
  } catch (const std::exception& e) {
    return unreachable(u, e);
  }
}

Result<HttpReply> http_upload_file(const std::string& method, const std::string& url,
                                   const std::string& path, const std::string& content_type,
                                   int timeout_s, const std::string& bearer_token,
                                   const TlsClientOptions& tls) {
  LIZARD_ASSIGN_OR_RETURN(ServerUri u, parse_server_uri(url));
  const OwnedFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::error_code size_error;
  const uint64_t size = std::filesystem::file_size(path, size_error);
  if (in.get() < 0 || size_error) return not_found("cannot read " + path);
  net::io_context ioc;
  try {
    LIZARD_ASSIGN_OR_RETURN(MaybeTlsStream stream, connect(ioc, u, timeout_s, tls));
    http::request<http::empty_body> req(http::string_to_verb(method), target_of(u), 11);
    set_common_fields(&req, u, bearer_token);
    req.set(http::field::content_type, content_type);
    req.set(http::field::content_length, std::to_string(size));
    http::request_serializer<http::empty_body> header(req);
    http::write_header(stream, header);
    bool copy = stream.is_tls();
    if (!copy)
      LIZARD_RETURN_IF_ERROR(
          send_file_plain(stream.socket().native_handle(), in.get(), size, timeout_s, path, &copy));
    if (copy) LIZARD_RETURN_IF_ERROR(send_file_copied(stream, in.get(), size, path));
    return read_reply(stream);
  } catch (const std::exception& e) {
    return unreachable(u, e);
  }
}

Result<HttpReply> http_download_file(const std::string& url, const std::string& path, int timeout_s,
                                     const std::string& bearer_token, const TlsClientOptions& tls) {
  LIZARD_ASSIGN_OR_RETURN(ServerUri u, parse_server_uri(url));
  const std::string part = path + ".part";
  net::io_context ioc;
  try {
    LIZARD_ASSIGN_OR_RETURN(MaybeTlsStream stream, connect(ioc, u, timeout_s, tls));
    http::request<http::empty_body> req(http::verb::get, target_of(u), 11);
    set_common_fields(&req, u, bearer_token);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);
    http::read_header(stream, buffer, parser);
    HttpReply reply{static_cast<int>(parser.get().result_int()), ""};
    const auto length = parser.content_length();
    if (reply.status == 200 && length) {  // straight to the file, in large blocks
      Status st = receive_to_file(stream, buffer, *length, part);
      close(stream);
      if (!st.ok()) {
        std::remove(part.c_str());
        return st;
      }
    } else {
      http::read(stream, buffer, parser);
      close(stream);
      reply.body = std::move(parser.get().body());
      if (reply.status != 200) return reply;
      if (Status st = write_whole_file(part, reply.body); !st.ok()) {
        std::remove(part.c_str());
        return st;
      }
      reply.body.clear();
    }
    std::error_code moved;
    std::filesystem::rename(part, path, moved);
    if (moved) return internal_error("cannot write " + path + ": " + moved.message());
    return reply;
  } catch (const std::exception& e) {
    std::remove(part.c_str());
    return unreachable(u, e);
  }
}

}  // namespace lizard
