// A worker of another wire version is told so by the server, which names
// both versions, logs it and stays up, instead of failing later.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#include "client/worker_connection.h"
#include "local_cluster.h"
#include "protocol/messages.h"

namespace lizard {
namespace {

TEST(WireVersion, AWorkerOfAnotherVersionIsRefusedNamingBothVersions) {
  LocalCluster c;
  ASSERT_TRUE(c.start(0).ok());
  std::mutex mu;
  std::condition_variable cv;
  std::string refusal;
  HelloMsg hello;
  hello.hostname = "newer";
  hello.protocol = kWireVersion + 1;
  std::string frame = encode(hello.to_message());
  frame[2] = static_cast<char>(kWireVersion + 1);  // as a worker of the next version sends it
  std::unique_ptr<WorkerConnection> conn;
  conn = std::make_unique<WorkerConnection>(
      "127.0.0.1", c.port(), "",
      ConnectionCallbacks{[&] { conn->send(frame); },
                          [&](std::string answer) {
                            std::lock_guard<std::mutex> l(mu);
                            if (refusal.empty()) refusal = accept_welcome_frame(answer).message();
                            cv.notify_all();
                          },
                          nullptr, nullptr});
  conn->start();
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait_for(l, std::chrono::seconds(20), [&] { return !refusal.empty(); });
  }
  conn->stop();
  const std::string why = "the worker speaks wire protocol version " +
                          std::to_string(kWireVersion + 1) + ", the server version " +
                          std::to_string(kWireVersion);
  EXPECT_EQ(refusal, "the server refused this worker: " + why);
  EXPECT_TRUE(c.server_alive());
  EXPECT_EQ(get_json(c, "/clients"), nlohmann::json::array());
  std::ifstream log(c.dir() + "/server.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find(why), std::string::npos) << text.str();
}

}  // namespace
}  // namespace lizard
