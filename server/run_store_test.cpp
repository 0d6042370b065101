#include "server/run_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "server/run_store_backends_testing.h"

#ifdef LIZARD_HAVE_SQLITE
#include <sqlite3.h>
#endif

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << path;
}

class RunStoreTest : public ::testing::TestWithParam<RunStoreBackend> {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "lizard-run-store-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = (root_ / "state").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::unique_ptr<RunStore> open() {
    auto store = GetParam().open(dir_);
    EXPECT_TRUE(store.ok()) << store.status().message();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  static std::vector<StoredRun> all(const RunStore& store) {
    auto runs = store.load_all();
    EXPECT_TRUE(runs.ok()) << runs.status().message();
    return runs.ok() ? runs.value() : std::vector<StoredRun>{};
  }

  static std::vector<std::string> ids(const std::vector<StoredRun>& runs) {
    std::vector<std::string> out;
    for (const auto& r : runs) out.push_back(r.id);
    return out;
  }

  fs::path root_;
  std::string dir_;
};

const json kRecord = {{"runtime_id", "r1"},
                      {"status", "done"},
                      {"params", {{"k", 3}, {"name", "caf\u00e9 \"quoted\"\n"}}},
                      {"timings", {1.5, 2.25}},
                      {"plan", {{"workers", json::array({"w1", "w2"})}}},
                      {"big", 18446744073709551615ull},
                      {"neg", -7}};

TEST_P(RunStoreTest, SaveAndLoadRoundTrip) {
  auto store = open();
  ASSERT_TRUE(store);
  EXPECT_TRUE(all(*store).empty());
  ASSERT_TRUE(store->save("r1", 1, "done", kRecord).ok());
  auto runs = all(*store);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, "r1");
  EXPECT_EQ(runs[0].seq, 1u);
  EXPECT_EQ(runs[0].status, "done");
  EXPECT_EQ(runs[0].record, kRecord);
}

TEST_P(RunStoreTest, TextThatIsNotUtf8IsKept) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->save("r1", 1, "failed", {{"error", "nvcc: \xff\xfe bad"}}).ok());
  auto runs = all(*store);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].record["error"], "nvcc: \ufffd\ufffd bad");
}

TEST_P(RunStoreTest, SaveReplacesTheRun) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->save("r1", 1, "queued", {{"status", "queued"}}).ok());
  ASSERT_TRUE(store->save("r2", 2, "queued", {{"status", "queued"}}).ok());
  ASSERT_TRUE(store->save("r1", 1, "running", {{"status", "running"}, {"iterations", 4}}).ok());
  auto runs = all(*store);
  ASSERT_EQ(ids(runs), (std::vector<std::string>{"r1", "r2"}));
  EXPECT_EQ(runs[0].status, "running");
  EXPECT_EQ(runs[0].record, json({{"status", "running"}, {"iterations", 4}}));
  EXPECT_EQ(runs[1].status, "queued");
}

TEST_P(RunStoreTest, LoadAllIsInSeqOrder) {
  auto store = open();
  ASSERT_TRUE(store);
  // Neither the order of saving nor the order of the ids is the seq order.
  for (uint64_t seq : {10, 2, 33, 1, 100}) {
    ASSERT_TRUE(store->save("r" + std::to_string(seq), seq, "done", json::object()).ok());
  }
  EXPECT_EQ(ids(all(*store)), (std::vector<std::string>{"r1", "r2", "r10", "r33", "r100"}));
}

// A stored field's bytes, or "?" and the error.
std::string blob_or(const RunStore& store, const std::string& run, const std::string& field) {
  auto got = store.load_blob(run, field);
  return got.ok() ? got.value() : "?" + got.status().message();
}

TEST_P(RunStoreTest, BlobsRoundTripBinaryBytes) {
  auto store = open();
  ASSERT_TRUE(store);
  std::string bytes;
  for (int i = 0; i < 4 * 256; ++i) bytes.push_back(static_cast<char>(i % 256));
  bytes += std::string(3, '\0');
  std::string large(3 << 20, '\0');
  for (size_t i = 0; i < large.size(); i += 4093) large[i] = static_cast<char>(i * 31);

  ASSERT_TRUE(store->save_blob("r1", "labels", "old").ok());
  ASSERT_TRUE(store->save_blob("r1", "labels", bytes).ok());
  ASSERT_TRUE(store->save_blob("r1", "centroids", large).ok());
  ASSERT_TRUE(store->save_blob("r2", "labels", "").ok());

  auto got = store->load_blob("r1", "labels");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value(), bytes);
  got = store->load_blob("r1", "centroids");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(got.value() == large);
  got = store->load_blob("r2", "labels");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value(), "");

  EXPECT_EQ(store->load_blob("r1", "missing").status().code(), Code::kNotFound);
  EXPECT_EQ(store->load_blob("r9", "labels").status().code(), Code::kNotFound);
}

TEST_P(RunStoreTest, ReopeningKeepsEverything) {
  {
    auto store = open();
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->save("r1", 1, "done", kRecord).ok());
    ASSERT_TRUE(store->save("r2", 2, "running", {{"status", "running"}}).ok());
    ASSERT_TRUE(store->save_blob("r1", "out", std::string("a\0b", 3)).ok());
  }
  auto store = open();
  ASSERT_TRUE(store);
  auto runs = all(*store);
  ASSERT_EQ(ids(runs), (std::vector<std::string>{"r1", "r2"}));
  EXPECT_EQ(runs[0].record, kRecord);
  EXPECT_EQ(runs[1].status, "running");
  auto blob = store->load_blob("r1", "out");
  ASSERT_TRUE(blob.ok()) << blob.status().message();
  EXPECT_EQ(blob.value(), std::string("a\0b", 3));
  // And it still takes writes.
  ASSERT_TRUE(store->save("r2", 2, "failed", {{"error", "the server restarted"}}).ok());
  EXPECT_EQ(all(*store)[1].status, "failed");
}

TEST_P(RunStoreTest, RemoveForgetsTheRunAndItsFields) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->save("r1", 1, "done", kRecord).ok());
  ASSERT_TRUE(store->save("r2", 2, "done", kRecord).ok());
  ASSERT_TRUE(store->save_blob("r1", "out", "x").ok());
  ASSERT_TRUE(store->save_blob("r2", "out", "y").ok());
  ASSERT_TRUE(store->remove("r1").ok());
  EXPECT_EQ(ids(all(*store)), std::vector<std::string>{"r2"});
  EXPECT_EQ(store->load_blob("r1", "out").status().code(), Code::kNotFound);
  EXPECT_EQ(store->load_blob("r2", "out").value(), "y");
  EXPECT_TRUE(store->remove("r1").ok());
  store.reset();
  store = open();
  ASSERT_TRUE(store);
  EXPECT_EQ(ids(all(*store)), std::vector<std::string>{"r2"});
}

// A finished run's fields, small (kept with the record) and large (a file
// of their own), outlive its record saved again (as a restart's restore
// does) and a reopening, and go with remove().
TEST_P(RunStoreTest, AFinishedRunsFieldsOutliveItsRecordSavedAgain) {
  const std::string small("a\nb\0c\n", 7);
  const std::string large(RunStore::kInlineFieldBytes + 5, 'L');
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->save("r1", 1, "running", {{"status", "running"}}).ok());
  ASSERT_TRUE(store
                  ->save_finished("r1", 1, "done", kRecord,
                                  {{"state", small}, {"big", large}, {"empty", ""}})
                  .ok());
  const json again = {{"status", "done"}, {"runtime_id", "r1"}};
  ASSERT_TRUE(store->save("r1", 1, "done", again).ok());
  store.reset();
  store = open();
  ASSERT_TRUE(store);
  auto runs = all(*store);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].record, again);
  EXPECT_EQ(blob_or(*store, "r1", "state"), small);
  EXPECT_TRUE(blob_or(*store, "r1", "big") == large);
  EXPECT_EQ(blob_or(*store, "r1", "empty"), "");
  EXPECT_EQ(store->load_blob("r1", "other").status().code(), Code::kNotFound);
  ASSERT_TRUE(store->remove("r1").ok());
  EXPECT_EQ(store->load_blob("r1", "state").status().code(), Code::kNotFound);
  EXPECT_EQ(store->load_blob("r1", "big").status().code(), Code::kNotFound);
}

TEST_P(RunStoreTest, NamesThatAreNotPlainFileNamesAreRefused) {
  auto store = open();
  ASSERT_TRUE(store);
  for (const std::string bad : {"", "../escape", "a/b", ".hidden", "..", "a b"}) {
    EXPECT_EQ(store->save(bad, 1, "done", kRecord).code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(store->save_blob(bad, "f", "x").code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(store->save_blob("r1", bad, "x").code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(store->load_blob("r1", bad).status().code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(store->remove(bad).code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(fs::exists(root_ / "escape.json"));
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "escape"));
  EXPECT_TRUE(all(*store).empty());
  EXPECT_TRUE(store->save("run-1.retry_2", 1, "done", kRecord).ok());
}

TEST_P(RunStoreTest, ConcurrentSavesAllLand) {
  auto store = open();
  ASSERT_TRUE(store);
  constexpr int kThreads = 6, kEach = 40;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const uint64_t seq = static_cast<uint64_t>(t * kEach + i + 1);
        const std::string id = "r" + std::to_string(seq);
        EXPECT_TRUE(store->save(id, seq, "queued", {{"t", t}}).ok());
        EXPECT_TRUE(store->save(id, seq, "done", {{"t", t}, {"i", i}}).ok());
        EXPECT_TRUE(store->save_blob(id, "out", id).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  auto runs = all(*store);
  ASSERT_EQ(runs.size(), static_cast<size_t>(kThreads * kEach));
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].seq, i + 1);
    EXPECT_EQ(runs[i].status, "done");
    EXPECT_EQ(store->load_blob(runs[i].id, "out").value(), runs[i].id);
  }
}

TEST_P(RunStoreTest, UnusableStateDirIsAClearError) {
  write_bytes(root_ / "a-file", "not a directory");
  for (const fs::path& bad : {root_ / "a-file", root_ / "a-file" / "state"}) {
    auto store = GetParam().open(bad.string());
    ASSERT_FALSE(store.ok()) << bad;
    EXPECT_NE(store.status().message().find("run store"), std::string::npos)
        << store.status().message();
    EXPECT_NE(store.status().message().find(bad.string()), std::string::npos)
        << store.status().message();
  }
}

TEST_P(RunStoreTest, RefusesToWriteIntoAStateDirItCannotWrite) {
  if (geteuid() == 0) GTEST_SKIP() << "root can write anywhere";
  fs::create_directories(dir_);
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  auto store = GetParam().open(dir_);
  fs::permissions(dir_, fs::perms::owner_all);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(dir_), std::string::npos) << store.status().message();
}

// Built whole (no push_back into an empty vector, which GCC 13 warns about
// where only one backend is built).
INSTANTIATE_TEST_SUITE_P(Backends, RunStoreTest, ::testing::ValuesIn(run_store_backends()),
                         run_store_backend_name);

// ---- what only one backend has ------------------------------------------------

class RunStoreDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "lizard-run-store-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(RunStoreDirTest, FilesBackendReportsACorruptRecord) {
  auto store = RunStore::open_files(dir_.string());
  ASSERT_TRUE(store.ok()) << store.status().message();
  ASSERT_TRUE((*store)->save("r1", 1, "done", kRecord).ok());
  ASSERT_TRUE((*store)->save("r2", 2, "done", kRecord).ok());
  ASSERT_TRUE((*store)->load_all().ok());
  write_bytes(dir_ / "runs" / "r2.json", R"({"schema": 1, "id": "r2", "se)");
  auto runs = (*store)->load_all();
  ASSERT_FALSE(runs.ok());
  EXPECT_NE(runs.status().message().find("corrupt"), std::string::npos) << runs.status().message();
  EXPECT_NE(runs.status().message().find("r2.json"), std::string::npos) << runs.status().message();
}

TEST_F(RunStoreDirTest, FilesBackendRefusesARecordOfANewerSchema) {
  fs::create_directories(dir_ / "runs");
  write_bytes(
      dir_ / "runs" / "r1.json",
      json({{"schema", 2}, {"id", "r1"}, {"seq", 1}, {"status", "done"}, {"record", {}}}).dump());
  auto store = RunStore::open_files(dir_.string());
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto runs = (*store)->load_all();
  ASSERT_FALSE(runs.ok());
  EXPECT_NE(runs.status().message().find("newer"), std::string::npos) << runs.status().message();
}

// The files store writes a finished run's small fields into its record
// file (one write and fsync, not one a field), and still reads a record
// file of an earlier server (the JSON alone, no line break after it).
TEST_F(RunStoreDirTest, FilesBackendKeepsSmallFieldsInTheRecordFile) {
  auto store = RunStore::open_files(dir_.string());
  ASSERT_TRUE(store.ok()) << store.status().message();
  const std::string large(RunStore::kInlineFieldBytes + 1, 'L');
  ASSERT_TRUE((*store)->save_finished("r1", 1, "done", kRecord, {{"s", "abc"}, {"l", large}}).ok());
  EXPECT_FALSE(fs::exists(dir_ / "runs" / "r1" / "s.npy"));
  EXPECT_TRUE(fs::exists(dir_ / "runs" / "r1" / "l.npy"));
  write_bytes(
      dir_ / "runs" / "r2.json",
      json({{"schema", 1}, {"id", "r2"}, {"seq", 2}, {"status", "done"}, {"record", kRecord}})
          .dump());
  auto runs = (*store)->load_all();
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].record, kRecord);
  EXPECT_EQ((*runs)[1].record, kRecord);
  EXPECT_EQ(blob_or(**store, "r1", "s"), "abc");
}

#ifdef LIZARD_HAVE_SQLITE

TEST_F(RunStoreDirTest, OpenUsesSqlite) {
  auto store = RunStore::open(dir_.string());
  ASSERT_TRUE(store.ok()) << store.status().message();
  ASSERT_TRUE((*store)->save("r1", 1, "done", kRecord).ok());
  EXPECT_TRUE(fs::exists(dir_ / "runs.sqlite3"));
  EXPECT_FALSE(fs::exists(dir_ / "runs" / "r1.json"));
}

TEST_F(RunStoreDirTest, SqliteBackendReportsACorruptDatabase) {
  std::string garbage;
  for (int i = 0; i < 8192; ++i) garbage.push_back(static_cast<char>('a' + i % 26));
  write_bytes(dir_ / "runs.sqlite3", garbage);
  auto store = RunStore::open_sqlite(dir_.string());
  ASSERT_FALSE(store.ok());
  const std::string& m = store.status().message();
  EXPECT_NE(m.find((dir_ / "runs.sqlite3").string()), std::string::npos) << m;
  EXPECT_NE(m.find("not a database"), std::string::npos) << m;
}

TEST_F(RunStoreDirTest, SqliteBackendRefusesANewerSchema) {
  {
    auto store = RunStore::open_sqlite(dir_.string());
    ASSERT_TRUE(store.ok()) << store.status().message();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "runs.sqlite3").c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "PRAGMA user_version = 7", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto store = RunStore::open_sqlite(dir_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("schema version 7"), std::string::npos)
      << store.status().message();
}

TEST_F(RunStoreDirTest, SqliteBackendUsesWalAndTheDocumentedSchema) {
  {
    auto store = RunStore::open_sqlite(dir_.string());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE((*store)->save("r1", 1, "done", kRecord).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "runs.sqlite3").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "wal");
  sqlite3_finalize(s);
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT id, seq, status, record, updated_at FROM runs", -1, &s,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "r1");
  EXPECT_EQ(sqlite3_column_int64(s, 1), 1);
  EXPECT_EQ(json::parse(reinterpret_cast<const char*>(sqlite3_column_text(s, 3))), kRecord);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 4))).size(),
            std::string("2024-01-01T00:00:00Z").size());
  sqlite3_finalize(s);
  sqlite3_close(db);
}

// Small fields are rows of the database (no file, no fsync each); large ones
// files beside it; whichever was written last is what loads.
TEST_F(RunStoreDirTest, SqliteBackendKeepsSmallFieldsInTheDatabaseAndLargeOnesInFiles) {
  auto store = RunStore::open_sqlite(dir_.string());
  ASSERT_TRUE(store.ok()) << store.status().message();
  const std::string small(RunStore::kInlineFieldBytes, 's');
  const std::string large(RunStore::kInlineFieldBytes + 1, 'L');
  const fs::path file = dir_ / "runs" / "r1" / "f.npy";
  ASSERT_TRUE((*store)->save_blob("r1", "f", small).ok());
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE((*store)->load_blob("r1", "f").value() == small);
  ASSERT_TRUE((*store)->save_blob("r1", "f", large).ok());
  EXPECT_TRUE(fs::exists(file));
  EXPECT_TRUE((*store)->load_blob("r1", "f").value() == large);
  ASSERT_TRUE((*store)->save_blob("r1", "f", "tiny").ok());
  EXPECT_EQ((*store)->load_blob("r1", "f").value(), "tiny");
  store->reset();
  store = RunStore::open_sqlite(dir_.string());
  ASSERT_TRUE(store.ok()) << store.status().message();
  EXPECT_EQ((*store)->load_blob("r1", "f").value(), "tiny");
  ASSERT_TRUE((*store)->remove("r1").ok());
  EXPECT_EQ((*store)->load_blob("r1", "f").status().code(), Code::kNotFound);
  EXPECT_FALSE(fs::exists(file));
}

#else

TEST_F(RunStoreDirTest, WithoutSqliteOpenUsesFilesAndOpenSqliteSaysWhy) {
  auto sqlite = RunStore::open_sqlite(dir_.string());
  ASSERT_FALSE(sqlite.ok());
  EXPECT_NE(sqlite.status().message().find("without"), std::string::npos);
  auto store = RunStore::open(dir_.string());
  ASSERT_TRUE(store.ok()) << store.status().message();
  ASSERT_TRUE((*store)->save("r1", 1, "done", kRecord).ok());
  EXPECT_TRUE(fs::exists(dir_ / "runs" / "r1.json"));
}

#endif

}  // namespace
}  // namespace lizard
