// A connection to the worker hub is a worker only once its hello is
// accepted.  Until then it may send small messages only, for a short time:
// one that upgrades and says nothing is closed after kHelloDeadlineS, one
// that streams a large message first is closed at the limit, and one that
// sends another message before its hello is closed at once.  Real workers
// join and run meanwhile.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <chrono>
#include <string>

#include "local_cluster.h"
#include "protocol/messages.h"
#include "server/transport.h"

namespace lizard {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using net::ip::tcp;
using nlohmann::json;

// A WebSocket to the hub that speaks only when told to.
class RawHubConnection {
 public:
  explicit RawHubConnection(uint16_t port) : ws_(io_) {
    tcp::resolver resolver(io_);
    net::connect(ws_.next_layer(), resolver.resolve("127.0.0.1", std::to_string(port)));
    ws_.binary(true);
    ws_.handshake("127.0.0.1:" + std::to_string(port), "/hub");
  }
  // Writes one message; false once the server has closed the connection.
  bool write(const std::string& bytes) {
    beast::error_code ec;
    ws_.write(net::buffer(bytes), ec);
    return !ec;
  }
  // Seconds until the server closes the connection (reads until it does),
  // or -1 after `limit_s`.
  double seconds_until_closed(int limit_s) {
    const auto t0 = std::chrono::steady_clock::now();
    beast::get_lowest_layer(ws_).non_blocking(false);
    ::timeval tv{limit_s, 0};
    ::setsockopt(ws_.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    beast::flat_buffer buf;
    beast::error_code ec;
    while (!ec) ws_.read(buf, ec);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return s < limit_s ? s : -1;
  }

 private:
  net::io_context io_;
  websocket::stream<tcp::socket> ws_;
};

class HelloBounds : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(c_.start(1).ok()); }
  // A real worker still serves a run.
  void expect_runs() {
    const std::string hash = register_program(c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(hash.empty());
    json body = {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {1, 2, 3}}}}}}};
    auto r = c_.post("/runtime/" + hash + "?wait=1", body.dump());
    ASSERT_TRUE(r.ok());
    json rec = json::parse(r->body, nullptr, false);
    EXPECT_EQ(rec.value("status", ""), "done") << r->body;
    EXPECT_EQ(get_json(c_, "/clients").size(), 1u);  // the silent connections are not workers
  }
  LocalCluster c_;
};

TEST_F(HelloBounds, AConnectionThatSaysNothingIsClosedAfterTheDeadline) {
  RawHubConnection silent(c_.port());
  const double s = silent.seconds_until_closed(kHelloDeadlineS + 10);
  EXPECT_GE(s, kHelloDeadlineS - 1);
  EXPECT_GT(s, 0) << "still open after " << kHelloDeadlineS + 10 << " s";
  expect_runs();
}

TEST_F(HelloBounds, ALargeMessageBeforeTheHelloClosesTheConnection) {
  RawHubConnection greedy(c_.port());
  greedy.write(std::string(kHelloMessageBytes + 4096, 'x'));
  const double s = greedy.seconds_until_closed(kHelloDeadlineS - 2);
  EXPECT_GE(s, 0) << "still open: the server kept reading past " << kHelloMessageBytes;
  expect_runs();
}

TEST_F(HelloBounds, AMessageOtherThanHelloFirstClosesTheConnection) {
  RawHubConnection eager(c_.port());
  ASSERT_TRUE(eager.write(encode(ResourcesMsg{}.to_message())));
  const double s = eager.seconds_until_closed(kHelloDeadlineS - 2);
  EXPECT_GE(s, 0) << "still open after a resources message before any hello";
  expect_runs();
}

}  // namespace
}  // namespace lizard
