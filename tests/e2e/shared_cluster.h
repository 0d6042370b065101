// SharedClusterTest: a gtest fixture whose suite shares one LocalCluster (a
// server and two CPU workers), since starting processes is the slow part.
//
//   class MySuite : public SharedClusterTest {};
//   TEST_F(MySuite, X) { auto rec = run(register_program(dir), body); }
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "local_cluster.h"

namespace lizard {

class SharedClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LocalCluster();
    Status st = cluster_->start(2);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void TearDown() override { EXPECT_TRUE(cluster_->server_alive()) << "the server died"; }

  // Registers a program directory; returns its checksum.
  static std::string register_program(const std::string& dir) {
    CommandResult r = cluster_->load_program(dir);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return printed_checksum(r);
  }

  // Starts a run and waits for its record; checks the HTTP status.
  static nlohmann::json run(const std::string& hash, const nlohmann::json& body,
                            int expect_status = 200) {
    auto r = cluster_->post("/runtime/" + hash + "?wait=1", body.dump());
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return nlohmann::json();
    EXPECT_EQ(r->status, expect_status) << r->body;
    return nlohmann::json::parse(r->body, nullptr, false);
  }

  static inline LocalCluster* cluster_ = nullptr;
};

}  // namespace lizard
