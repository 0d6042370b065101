// UserDirectory: a users file's entries are found by their tokens (never
// kept themselves), its mistakes are named, and `lizard users add` adds a
// user whose printed token then finds them.
#include "users/user_directory.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace lizard {
namespace {

namespace fs = std::filesystem;

std::string entry(const std::string& name, const std::string& role, const std::string& token) {
  return "  - name: " + name + "\n    role: " + role +
         "\n    token_sha256: " + UserDirectory::token_digest(token) + "\n";
}

TEST(UserDirectory, FindsEachUserByTheirTokenAndNoOneByAnother) {
  const std::string yaml = "users:\n" + entry("alice", "user", "tok-a") +
                           entry("root", "admin", "tok-r") + entry("eve", "reader", "tok-e") +
                           "    quota: {executors: 4, waiting: 2}\n";
  auto dir = UserDirectory::parse(yaml, "users.yaml");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  auto alice = dir->find("tok-a");
  ASSERT_TRUE(alice);
  EXPECT_EQ(alice->name, "alice");
  EXPECT_EQ(alice->role, Role::kUser);
  EXPECT_TRUE(alice->may_write());
  EXPECT_FALSE(alice->sees_everyones_data());
  EXPECT_EQ(dir->find("tok-r")->role, Role::kAdmin);
  auto eve = dir->find("tok-e");
  ASSERT_TRUE(eve);
  EXPECT_FALSE(eve->may_write());
  EXPECT_EQ(eve->quota.executors, 4);
  EXPECT_EQ(eve->quota.waiting, 2);
  EXPECT_FALSE(dir->find("tok-b"));
  EXPECT_FALSE(dir->find(""));
  EXPECT_FALSE(dir->find(UserDirectory::token_digest("tok-a")));  // the digest is no token
}

TEST(UserDirectory, NamesTheEntryAndWhatIsWrongWithIt) {
  const auto error = [](const std::string& yaml) {
    auto d = UserDirectory::parse(yaml, "u.yaml");
    return d.ok() ? std::string("(accepted)") : d.status().message();
  };
  EXPECT_NE(error("users:\n" + entry("a", "boss", "t")).find("users[0] (a): role"),
            std::string::npos);
  EXPECT_NE(error("users:\n  - name: a\n    token_sha256: abc\n").find("token_sha256"),
            std::string::npos);
  EXPECT_NE(error("users:\n" + entry("a", "user", "t") + entry("a", "user", "u"))
                .find("a second user named a"),
            std::string::npos);
  EXPECT_NE(error("users:\n" + entry("a", "user", "t") + entry("b", "user", "t"))
                .find("the same token as a"),
            std::string::npos);
  EXPECT_NE(error("users:\n" + entry("a b", "user", "t")).find("name"), std::string::npos);
  EXPECT_NE(error("users:\n" + entry("a", "user", "t") + "    password: x\n").find("'password'"),
            std::string::npos);
  EXPECT_NE(error("- a\n").find("users:"), std::string::npos);
  EXPECT_TRUE(UserDirectory::parse("", "u.yaml").ok());
}

TEST(UserDirectory, AddedUsersTokenFindsThemAndOnlyItsDigestIsKept) {
  const fs::path dir = fs::path(::testing::TempDir()) / "lizard-users-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "users.yaml").string();
  User alice;
  alice.name = "alice";
  alice.quota.executors = 2;
  auto token = add_user_to_file(path, alice);
  ASSERT_TRUE(token.ok()) << token.status().message();
  User root;
  root.name = "root";
  root.role = Role::kAdmin;
  auto root_token = add_user_to_file(path, root);
  ASSERT_TRUE(root_token.ok()) << root_token.status().message();
  EXPECT_NE(*token, *root_token);
  EXPECT_FALSE(add_user_to_file(path, alice).ok()) << "a second alice";

  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u) << "readable by its owner only";
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find(*token), std::string::npos) << text;

  auto loaded = UserDirectory::load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto found = loaded->find(*token);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->name, "alice");
  EXPECT_EQ(found->quota.executors, 2);
  EXPECT_EQ(loaded->find(*root_token)->role, Role::kAdmin);
  fs::remove_all(dir);
}

TEST(UserDirectory, ASingleTokenStandsForOneUser) {
  UserDirectory dir;
  dir.add_token("admin", Role::kAdmin, "s3cret");
  dir.add_token("reader", Role::kReader, "");  // no read token: nobody
  EXPECT_EQ(dir.users().size(), 1u);
  EXPECT_EQ(dir.find("s3cret")->name, "admin");
  EXPECT_FALSE(dir.find("s3cre"));
}

TEST(User, ReadsAndRunsOverOnlyWhatIsTheirsOrSharedUnlessTheirRoleReachesFurther) {
  const User alice{"alice", Role::kUser, {}};
  const User admin{"root", Role::kAdmin, {}};
  const User reader{"auditor", Role::kReader, {}};
  const Ownership alices{"alice", {}};
  const Ownership bobs{"bob", {}};
  const Ownership bobs_for_alice{"bob", {"carol", "alice"}};
  const Ownership bobs_for_all{"bob", {"*"}};
  const Ownership nobodys{"", {}};

  EXPECT_TRUE(alice.reads_data_of(alices));
  EXPECT_FALSE(alice.reads_data_of(bobs));
  EXPECT_TRUE(alice.reads_data_of(bobs_for_alice));
  EXPECT_TRUE(alice.reads_data_of(bobs_for_all));
  EXPECT_FALSE(alice.reads_data_of(nobodys));
  EXPECT_FALSE(alice.runs_over_data_of(bobs));
  EXPECT_TRUE(alice.runs_over_data_of(bobs_for_alice));

  EXPECT_TRUE(admin.reads_data_of(bobs));
  EXPECT_TRUE(admin.runs_over_data_of(bobs));
  // A reader reads everyone's data, but a run is never theirs to start.
  EXPECT_TRUE(reader.reads_data_of(bobs));
  EXPECT_FALSE(reader.runs_over_data_of(bobs));
}

}  // namespace
}  // namespace lizard
