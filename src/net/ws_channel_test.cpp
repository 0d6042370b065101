#include "net/ws_channel.h"

#include <gtest/gtest.h>
#include <boost/asio.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/websocket.hpp>

#include <future>
#include <thread>

#include "common/mailbox.h"
#include "net/ws_channel_open.h"
#include "tests/allocations.h"

namespace lizard {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// Both ends of one channel over 127.0.0.1, on one io thread.
class WsChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    acceptor_.open(tcp::v4());
    acceptor_.bind({net::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  void TearDown() override {
    work_.reset();
    if (server_) server_->abort();
    if (client_) client_->abort();
    ioc_.stop();
    thread_.join();
  }

  // Opens both ends; frames and ends are collected in the mailboxes.
  void open(WsChannelOptions server_opts = {}, WsChannelOptions client_opts = {},
            std::map<std::string, std::string> headers = {}) {
    std::promise<std::shared_ptr<WsChannel>> server_side, client_side;
    acceptor_.async_accept([&, server_opts](beast::error_code ec, tcp::socket s) {
      ASSERT_FALSE(ec) << ec.message();
      auto buffer = std::make_shared<beast::flat_buffer>();
      auto req = std::make_shared<http::request<http::string_body>>();
      auto sock = std::make_shared<tcp::socket>(std::move(s));
      http::async_read(
          *sock, *buffer, *req, [&, buffer, req, sock, server_opts](beast::error_code ec, size_t) {
            ASSERT_FALSE(ec) << ec.message();
            upgrade_headers_ = std::string((*req)[http::field::authorization]);
            accept_ws_channel(
                std::move(*sock), std::move(*req), server_opts,
                [&](const std::shared_ptr<WsChannel>& ch) {
                  server_side.set_value(ch);
                  return WsChannelCallbacks{
                      [this](std::string f) { at_server_.push(std::move(f)); },
                      [this](const std::string& why) { server_ends_.push("closed: " + why); }};
                },
                [&](const WsOpenFailure& f) { ADD_FAILURE() << f.message; });
          });
    });
    tcp::socket s(ioc_);
    s.connect(acceptor_.local_endpoint());
    net::post(ioc_,
              [&, s = std::make_shared<tcp::socket>(std::move(s)), client_opts, headers]() mutable {
                handshake_ws_channel(
                    std::move(*s), "127.0.0.1", "/workers", headers, client_opts,
                    [&](const std::shared_ptr<WsChannel>& ch) {
                      client_side.set_value(ch);
                      return WsChannelCallbacks{
                          [this](std::string f) { at_client_.push(std::move(f)); },
                          [this](const std::string& why) { client_ends_.push("closed: " + why); }};
                    },
                    [&](const WsOpenFailure& f) { ADD_FAILURE() << f.message; });
              });
    auto fs = server_side.get_future(), fc = client_side.get_future();
    ASSERT_EQ(fs.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    ASSERT_EQ(fc.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    server_ = fs.get();
    client_ = fc.get();
  }

  static std::string next(Mailbox<std::string>& box) {
    auto v = box.pop_for(std::chrono::seconds(10));
    return v ? *v : "(nothing)";
  }

  net::io_context ioc_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_{
      net::make_work_guard(ioc_)};
  tcp::acceptor acceptor_{ioc_};
  std::thread thread_;
  std::shared_ptr<WsChannel> server_, client_;
  Mailbox<std::string> at_server_, at_client_, server_ends_, client_ends_;
  std::string upgrade_headers_;
};

TEST_F(WsChannelTest, FramesArriveWholeAndInOrderBothWays) {
  open({}, {}, {{"Authorization", "Bearer t0k"}});
  EXPECT_EQ(upgrade_headers_, "Bearer t0k");
  EXPECT_NE(server_->peer().find("127.0.0.1:"), std::string::npos);
  auto rows = std::make_shared<std::string>(3 << 20, 'r');  // larger than one read
  for (int i = 0; i < 50; ++i) client_->send("c" + std::to_string(i));
  server_->send(OutgoingFrame("head:", *rows, rows));
  server_->send(std::string("after"));
  for (int i = 0; i < 50; ++i) EXPECT_EQ(next(at_server_), "c" + std::to_string(i));
  EXPECT_EQ(next(at_client_), "head:" + *rows);
  EXPECT_EQ(next(at_client_), "after");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server_->queued_bytes() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(server_->queued_bytes(), 0u);
}

// A run's thread sends a frame every iteration, and the peer reads each into
// a buffer from its pool and gives it back: once their buffers have grown,
// neither side allocates.
TEST_F(WsChannelTest, FramesSentFromAnotherThreadAndReadIntoAPoolAllocateNothing) {
  WsChannelOptions server_opts;
  server_opts.frames = std::make_shared<FramePool>();
  open(server_opts, {});
  auto state = std::make_shared<std::string>(4096, 's');
  std::vector<uint64_t> at;  // the allocations after each round trip
  at.reserve(100);
  for (int i = 0; i < 100; ++i) {
    client_->send(OutgoingFrame(std::string(), *state, state));
    auto got = at_server_.pop_for(std::chrono::seconds(10));
    ASSERT_TRUE(got.has_value());
    ASSERT_EQ(got->size(), state->size());
    server_opts.frames->give(std::move(*got));
    at.push_back(testing::allocations());
  }
  EXPECT_EQ(at.back() - at[20], 0u) << "allocations in round trips 21..100";
}

// A control frame (a run's abort) sent after large data frames overtakes
// those still waiting: on a slow link it must not wait for all of them.
TEST_F(WsChannelTest, AControlFrameGoesAheadOfQueuedDataFrames) {
  open();
  // Hold the io thread, so that every frame below is queued before any is
  // written.
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  net::post(ioc_, [opened] { opened.wait(); });
  auto rows = std::make_shared<std::string>(2 << 20, 'r');
  constexpr int kData = 6;
  for (int i = 0; i < kData; ++i)
    server_->send(OutgoingFrame("data" + std::to_string(i), *rows, rows));
  server_->send(OutgoingFrame::control("abort"));
  server_->send(std::string("after"));
  gate.set_value();
  std::vector<std::string> order;
  for (int i = 0; i < kData + 2; ++i) {
    std::string f = next(at_client_);
    order.push_back(f.substr(0, 5));
  }
  EXPECT_EQ(order.front(), "abort");
  EXPECT_EQ(order.back(), "after");
  for (int i = 0; i < kData; ++i) EXPECT_EQ(order[1 + i], "data" + std::to_string(i));
}

// A message larger than a WebSocket frame arrives whole.
TEST_F(WsChannelTest, AMessageSplitIntoFramesArrivesWhole) {
  open();
  auto rows = std::make_shared<std::string>(5 * WsChannel::kFragmentBytes + 17, 'x');
  (*rows)[rows->size() - 1] = 'y';
  server_->send(OutgoingFrame("head:", *rows, rows));
  client_->send(OutgoingFrame("back:", *rows, rows));
  EXPECT_EQ(next(at_client_), "head:" + *rows);
  EXPECT_EQ(next(at_server_), "back:" + *rows);
}

TEST_F(WsChannelTest, CloseEndsBothSidesOnceAndLaterSendsAreDropped) {
  open();
  client_->close();
  EXPECT_EQ(next(server_ends_).rfind("closed: ", 0), 0u);
  EXPECT_EQ(next(client_ends_).rfind("closed: ", 0), 0u);
  server_->send(std::string("late"));
  EXPECT_FALSE(at_client_.pop_for(std::chrono::milliseconds(100)).has_value());
  EXPECT_FALSE(server_ends_.pop_for(std::chrono::milliseconds(50)).has_value());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server_->queued_bytes() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(server_->queued_bytes(), 0u);
}

TEST_F(WsChannelTest, AbortIsNoticedByThePeer) {
  open();
  server_->abort();
  EXPECT_EQ(next(client_ends_).rfind("closed: ", 0), 0u);
  EXPECT_EQ(next(server_ends_).rfind("closed: ", 0), 0u);
}

TEST_F(WsChannelTest, APeerThatAnswersNoPingsIsGoneAfterTheIdleTimeout) {
  WsChannelOptions quick;
  quick.idle_timeout_s = 1;
  acceptor_.async_accept([&](beast::error_code ec, tcp::socket s) {
    ASSERT_FALSE(ec) << ec.message();
    auto buffer = std::make_shared<beast::flat_buffer>();
    auto req = std::make_shared<http::request<http::string_body>>();
    auto sock = std::make_shared<tcp::socket>(std::move(s));
    http::async_read(*sock, *buffer, *req, [&, buffer, req, sock](beast::error_code ec, size_t) {
      ASSERT_FALSE(ec) << ec.message();
      accept_ws_channel(
          std::move(*sock), std::move(*req), quick,
          [this](const std::shared_ptr<WsChannel>&) {
            return WsChannelCallbacks{
                nullptr, [this](const std::string& why) { server_ends_.push("closed: " + why); }};
          },
          [](const WsOpenFailure& f) { ADD_FAILURE() << f.message; });
    });
  });
  // A peer that completes the handshake and then reads nothing, so it
  // answers no ping.
  net::io_context silent_ioc;
  beast::websocket::stream<tcp::socket> silent(silent_ioc);
  silent.next_layer().connect(acceptor_.local_endpoint());
  silent.handshake("127.0.0.1", "/workers");
  const auto t0 = std::chrono::steady_clock::now();
  auto end = server_ends_.pop_for(std::chrono::seconds(10));
  ASSERT_TRUE(end.has_value()) << "the silent peer was never dropped";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(*end, "closed: missed heartbeat: no frame or pong within 1 s");
}

}  // namespace
}  // namespace lizard
