#include "server/file_visibility.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

using nlohmann::json;

const FileIdentity kFile{2049, 77, 4096, 1700000000000000001, 1700000000000000002};

FileProbedMsg seen(const FileIdentity& id) {
  FileProbedMsg m;
  m.ok = true;
  m.identity = id;
  return m;
}

TEST(VisibilityVerdict, EveryWorkerOnTheSameFileIsShared) {
  FileIdentity on_another_machine = kFile;
  on_another_machine.device = 51;  // the same shared file: only the device differs
  const json v = visibility_verdict("/d/x.npy", kFile, kFile,
                                    {{"w1", seen(kFile)}, {"w2", seen(on_another_machine)}}, {}, 5);
  EXPECT_EQ(v["shared"], true) << v.dump();
  EXPECT_FALSE(v.contains("why"));
  ASSERT_EQ(v["workers"].size(), 2u);
  EXPECT_EQ(v["workers"][1], (json{{"worker", "w2"}, {"sees", true}}));
}

TEST(VisibilityVerdict, AWorkerOnAnotherFileOrNoneIsNotShared) {
  FileIdentity older = kFile;
  older.size = 2048;
  FileProbedMsg refused;
  refused.error = "dataset path is outside the worker's data roots (--data-root)";
  const json v = visibility_verdict("/d/x.npy", kFile, std::nullopt,
                                    {{"w1", seen(older)}, {"w2", refused}}, {"w3"}, 5);
  EXPECT_EQ(v["shared"], false);
  EXPECT_EQ(
      v["why"],
      "worker w1: another file at this path (the server's -> the worker's: size 4096 -> 2048)");
  ASSERT_EQ(v["workers"].size(), 3u);
  EXPECT_EQ(v["workers"][1]["why"], refused.error);
  EXPECT_EQ(v["workers"][2],
            (json{{"worker", "w3"}, {"sees", false}, {"why", "did not answer within 5 s"}}));
}

TEST(VisibilityVerdict, TheClientsOtherFileOrNoWorkerIsNotShared) {
  FileIdentity clients = kFile;
  clients.inode = 78;
  json v = visibility_verdict("/d/x.npy", kFile, clients, {{"w1", seen(kFile)}}, {}, 5);
  EXPECT_EQ(v["shared"], false);
  EXPECT_EQ(v["why"],
            "the server sees another file at this path (yours -> the server's: inode 78 -> 77)");
  v = visibility_verdict("/d/x.npy", kFile, kFile, {}, {}, 5);
  EXPECT_EQ(v["shared"], false);
  EXPECT_EQ(v["why"], "no worker has joined");
}

}  // namespace
}  // namespace lizard
