#include "common/auth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

namespace lizard {
namespace {

TEST(Auth, ConstantTimeEquals) {
  EXPECT_TRUE(constant_time_equals("secret", "secret"));
  EXPECT_FALSE(constant_time_equals("secret", "secreT"));
  EXPECT_FALSE(constant_time_equals("secret", "secret2"));
  EXPECT_FALSE(constant_time_equals("", "x"));
  EXPECT_TRUE(constant_time_equals("", ""));
}

TEST(Auth, TokenFromAFileOnlyThisUserMayRead) {
  const std::string path = ::testing::TempDir() + "lizard-token-file-test";
  std::ofstream(path) << "s3cret \n";
  chmod(path.c_str(), 0600);
  auto token = token_from_file(path);
  ASSERT_TRUE(token.ok()) << token.status().message();
  EXPECT_EQ(*token, "s3cret");
  chmod(path.c_str(), 0644);
  auto open = token_from_file(path);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().message(),
            "token file " + path + " is open to other users (mode 0644): chmod 600 " + path);
  std::ofstream(path) << "\n";
  chmod(path.c_str(), 0600);
  EXPECT_EQ(token_from_file(path).status().message(), "token file " + path + " is empty");
  std::remove(path.c_str());
  EXPECT_FALSE(token_from_file(path).ok());
}

TEST(Auth, BearerToken) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("bearer  abc "), "abc");
  EXPECT_EQ(bearer_token("Basic abc"), "");
  EXPECT_EQ(bearer_token("Bearer "), "");
  EXPECT_EQ(bearer_token(""), "");
}

}  // namespace
}  // namespace lizard
