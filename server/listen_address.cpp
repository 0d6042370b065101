#include "server/listen_address.h"

#include <boost/asio/ip/address.hpp>

namespace lizard {

std::string listen_address(const std::string& host, const std::string& token) {
  if (!host.empty()) return host;
  return token.empty() ? "127.0.0.1" : "0.0.0.0";
}

bool exposed_without_token(const std::string& host, const std::string& token) {
  if (!token.empty()) return false;
  if (host == "localhost") return false;
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(host, ec);
  return ec || !addr.is_loopback();
}

}  // namespace lizard
