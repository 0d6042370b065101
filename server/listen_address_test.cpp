#include "server/listen_address.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

TEST(ListenAddress, WithoutATokenTheDefaultIsLoopback) {
  EXPECT_EQ(listen_address("", ""), "127.0.0.1");
  EXPECT_EQ(listen_address("", "s3cret"), "0.0.0.0");
  EXPECT_EQ(listen_address("0.0.0.0", ""), "0.0.0.0");  // --host is obeyed
  EXPECT_EQ(listen_address("10.1.2.3", "s3cret"), "10.1.2.3");
}

TEST(ListenAddress, OnlyNonLoopbackAddressesWithoutATokenAreExposed) {
  EXPECT_TRUE(exposed_without_token("0.0.0.0", ""));
  EXPECT_TRUE(exposed_without_token("::", ""));
  EXPECT_TRUE(exposed_without_token("10.1.2.3", ""));
  EXPECT_FALSE(exposed_without_token("0.0.0.0", "s3cret"));
  EXPECT_FALSE(exposed_without_token("127.0.0.1", ""));
  EXPECT_FALSE(exposed_without_token("127.0.0.2", ""));
  EXPECT_FALSE(exposed_without_token("::1", ""));
  EXPECT_FALSE(exposed_without_token("localhost", ""));
}

}  // namespace
}  // namespace lizard
