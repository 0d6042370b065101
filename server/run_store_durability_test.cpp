// The run store's part in surviving restarts: requests and checkpoints kept
// and read back, a full disk refused without harm, and a store that still
// opens after the server is killed in the middle of a write.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "server/durable_write.h"
#include "server/run_store.h"
#include "server/run_store_backends_testing.h"

#ifdef LIZARD_HAVE_SQLITE
#include <sqlite3.h>

#include "server/run_store_sqlite_testing.h"
#endif

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class RunStoreDurabilityTest : public ::testing::TestWithParam<RunStoreBackend> {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "lizard-run-store-d-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    fail_next_storage_writes(0);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<RunStore> open() {
    auto store = GetParam().open(dir_);
    EXPECT_TRUE(store.ok()) << store.status().message();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  static const StoredRun* find(const std::vector<StoredRun>& runs, const std::string& id) {
    for (const auto& r : runs)
      if (r.id == id) return &r;
    return nullptr;
  }
  std::string dir_;
};

const json kBody = {{"params", {{"k", 3}}}, {"dataset", {{"x", {{"upload", "u1"}}}}}};

TEST_P(RunStoreDurabilityTest, RequestsAndCheckpointsSurviveAReopen) {
  const std::string state("\x01\x00\xff\x7f", 4), agg("\x00\x00\x80\x3f", 4);
  {
    auto store = open();
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->save("r1", 1, "running", {{"status", "running"}}).ok());
    ASSERT_TRUE(store->save_request("r1", kBody).ok());
    ASSERT_TRUE(store->save_checkpoint("r1", {2, false, "old", "old"}).ok());
    ASSERT_TRUE(store->save_checkpoint("r1", {3, true, state, agg}).ok());
    ASSERT_TRUE(store->save("r2", 2, "queued", {{"status", "queued"}}).ok());
  }
  auto store = open();
  ASSERT_TRUE(store);
  auto runs = store->load_all();
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  const StoredRun* r1 = find(*runs, "r1");
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r1->request, kBody);
  ASSERT_TRUE(r1->checkpoint.has_value());
  EXPECT_EQ(r1->checkpoint->iteration, 3);
  EXPECT_TRUE(r1->checkpoint->done);
  EXPECT_EQ(r1->checkpoint->state, state);
  EXPECT_EQ(r1->checkpoint->aggregate, agg);
  const StoredRun* r2 = find(*runs, "r2");
  ASSERT_NE(r2, nullptr);
  EXPECT_TRUE(r2->request.is_null());
  EXPECT_FALSE(r2->checkpoint.has_value());

  ASSERT_TRUE(store->drop_checkpoint("r1").ok());
  EXPECT_FALSE(find(*store->load_all(), "r1")->checkpoint.has_value());
  EXPECT_EQ(find(*store->load_all(), "r1")->request, kBody);
  ASSERT_TRUE(store->save_checkpoint("r1", {4, false, state, agg}).ok());
  ASSERT_TRUE(store->remove("r1").ok());
  ASSERT_TRUE(store->save("r1", 1, "queued", {{"status", "queued"}}).ok());
  auto stored = store->load_all();  // `again` points into it
  ASSERT_TRUE(stored.ok());
  const StoredRun* again = find(*stored, "r1");
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->request.is_null()) << "remove() left the request behind";
  EXPECT_FALSE(again->checkpoint.has_value()) << "remove() left the checkpoint behind";
}

TEST_P(RunStoreDurabilityTest, AFullDiskFailsTheWriteAndChangesNothing) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->save("r1", 1, "running", {{"n", 1}}).ok());
  ASSERT_TRUE(store->save_checkpoint("r1", {1, false, "s1", "a1"}).ok());
  for (int write = 0; write < 4; ++write) {
    fail_next_storage_writes(1);
    Status st;
    switch (write) {
      case 0:
        st = store->save("r1", 1, "done", {{"n", 2}});
        break;
      case 1:
        st = store->save_request("r1", kBody);
        break;
      case 2:
        st = store->save_checkpoint("r1", {2, false, "s2", "a2"});
        break;
      case 3:
        st = store->save_blob("r1", "out", "bytes");
        break;
    }
    EXPECT_EQ(st.code(), Code::kStorageFull) << write << ": " << st.message();
    EXPECT_NE(st.message().find("disk is full"), std::string::npos) << st.message();
  }
  store.reset();
  store = open();  // what was there before is there, whole
  ASSERT_TRUE(store);
  auto runs = store->load_all();
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].status, "running");
  EXPECT_EQ((*runs)[0].record, json({{"n", 1}}));
  EXPECT_TRUE((*runs)[0].request.is_null());
  ASSERT_TRUE((*runs)[0].checkpoint.has_value());
  EXPECT_EQ((*runs)[0].checkpoint->state, "s1");
  EXPECT_EQ(store->load_blob("r1", "out").status().code(), Code::kNotFound);
  EXPECT_TRUE(store->save("r1", 1, "done", {{"n", 3}}).ok());  // and it takes writes again
}

// A finished run's fields, record and the end of its checkpoint in one call.
TEST_P(RunStoreDurabilityTest, AFinishedRunIsStoredAtOnce) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->save("r1", 1, "running", {{"n", 1}}).ok());
  ASSERT_TRUE(store->save_checkpoint("r1", {1, false, "s1", "a1"}).ok());
  const std::string big((size_t{1} << 20) + 1, 'b');  // a file, beside the rows
  ASSERT_TRUE(
      store->save_finished("r1", 1, "done", {{"n", 2}}, {{"small", "abc"}, {"big", big}}).ok());
  store.reset();
  store = open();
  ASSERT_TRUE(store);
  auto runs = store->load_all();
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].status, "done");
  EXPECT_EQ((*runs)[0].record, json({{"n", 2}}));
  EXPECT_FALSE((*runs)[0].checkpoint.has_value());
  EXPECT_EQ(store->load_blob("r1", "small").value(), "abc");
  EXPECT_EQ(store->load_blob("r1", "big").value(), big);
}

// A large field is written in pieces whose writeback starts on the way; its
// bytes come back whole, wherever a piece ends (in its head, in its data).
TEST_P(RunStoreDurabilityTest, ALargeFieldComesBackWholeAcrossItsWritebackPieces) {
  auto store = open();
  ASSERT_TRUE(store);
  std::string data((size_t{20} << 20) + 7, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 % 251);
  const std::string head(100, 'h');
  ASSERT_TRUE(store->save_finished("r1", 1, "done", {{"n", 1}}, {{"labels", head, data}}).ok());
  store.reset();
  store = open();
  ASSERT_TRUE(store);
  auto got = store->load_blob("r1", "labels");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(*got == head + data) << got->size() << " bytes";
}

// The server dies (SIGKILL) at random moments while it writes records and
// checkpoints; every time, the store opens, reads whole, and holds a
// checkpoint no older than the last one the writer had committed.
TEST_P(RunStoreDurabilityTest, KillMidWriteLeavesAStoreThatOpens) {
  std::mt19937 rng(std::random_device{}());
  int64_t last_seen = 0;
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // the writer: as fast as it can until killed
      ::close(pipe_fds[0]);
      auto store = GetParam().open(dir_);
      if (!store.ok()) ::_exit(2);
      std::string state(4096, 'x');
      for (int64_t i = last_seen + 1;; ++i) {
        std::memcpy(state.data(), &i, sizeof i);
        if (!(*store)->save_checkpoint("r1", {i, false, state, state}).ok()) ::_exit(3);
        if (!(*store)
                 ->save("r" + std::to_string(i % 50), static_cast<uint64_t>(i % 50), "done",
                        {{"i", i}, {"pad", std::string(i % 3000, 'p')}})
                 .ok())
          ::_exit(4);
        if (i == last_seen + 1) (void)!::write(pipe_fds[1], "k", 1);  // writing now
      }
    }
    ::close(pipe_fds[1]);
    char c;
    ASSERT_EQ(::read(pipe_fds[0], &c, 1), 1) << "the writer could not write";
    ::close(pipe_fds[0]);
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<int>(0, 30000)(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself: " << status;

    auto store = GetParam().open(dir_);
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto runs = (*store)->load_all();
    ASSERT_TRUE(runs.ok()) << runs.status().message();
    const StoredRun* r1 = find(*runs, "r1");
    ASSERT_NE(r1, nullptr);
    ASSERT_TRUE(r1->checkpoint.has_value());
    const RunCheckpoint& cp = *r1->checkpoint;
    ASSERT_EQ(cp.state.size(), 4096u);
    int64_t in_state = 0;
    std::memcpy(&in_state, cp.state.data(), sizeof in_state);
    EXPECT_EQ(in_state, cp.iteration) << "a checkpoint mixes two writes";
    EXPECT_GT(cp.iteration, last_seen);
    last_seen = cp.iteration;
#ifdef LIZARD_HAVE_SQLITE
    if (std::string(GetParam().name) == "Sqlite") {
      store->reset();
      sqlite3* db = nullptr;
      ASSERT_EQ(sqlite3_open((fs::path(dir_) / "runs.sqlite3").c_str(), &db), SQLITE_OK);
      sqlite3_stmt* s = nullptr;
      ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr), SQLITE_OK);
      ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
      EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "ok");
      sqlite3_finalize(s);
      sqlite3_close(db);
    }
#endif
  }
}

// The state directory removed (or removed and made again, empty) under an
// open store: every write fails, saying so, rather than going into a
// deleted database or a new directory unseen.
TEST_P(RunStoreDurabilityTest, ARemovedStateDirectoryFailsEveryWriteAndSaysSo) {
  for (bool made_again : {false, true}) {
    auto store = open();
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->save("r1", 1, "running", {{"n", 1}}).ok());
    EXPECT_TRUE(store->health().ok());
    fs::remove_all(dir_);
    if (made_again) fs::create_directories(dir_);
    const Status writes[] = {
        store->save("r1", 1, "done", {{"n", 2}}),
        store->save_request("r2", kBody),
        store->save_checkpoint("r1", {2, false, "s2", "a2"}),
        store->drop_checkpoint("r1"),
        store->save_blob("r1", "out", "bytes"),
        store->save_finished("r1", 1, "done", {{"n", 2}}, {{"small", "abc"}}),
        store->remove("r1"),
        store->health(),
    };
    for (const Status& st : writes) {
      EXPECT_EQ(st.code(), Code::kInternal) << made_again << ": " << st.message();
      EXPECT_NE(st.message().find("the state directory " + dir_ + " was removed or replaced"),
                std::string::npos)
          << st.message();
    }
    EXPECT_FALSE(fs::exists(fs::path(dir_) / "runs" / "r1"));  // nothing made anew
    store.reset();
    fs::create_directories(dir_);
  }
}

// A little disk is kept back, to be freed when a write meets a full disk.
TEST_P(RunStoreDurabilityTest, ReservedSpaceIsKeptAndFreedOnRequest) {
  const fs::path reserve = fs::path(dir_) / "reserved-space";
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(fs::exists(reserve));
  EXPECT_EQ(fs::file_size(reserve), RunStore::kReservedBytes);
  EXPECT_TRUE(store->release_reserved_space());
  EXPECT_FALSE(fs::exists(reserve));
  EXPECT_FALSE(store->release_reserved_space());
  store.reset();
  store = open();  // reserved again
  EXPECT_EQ(fs::file_size(reserve), RunStore::kReservedBytes);
}

#ifdef LIZARD_HAVE_SQLITE
// The database file alone unlinked: the store's open connection would go on
// writing into it, acknowledged and lost.
TEST(SqliteRunStoreGone, AnUnlinkedDatabaseFailsWrites) {
  std::string tmpl = (fs::temp_directory_path() / "lizard-run-store-g-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  auto store = RunStore::open_sqlite(dir);
  ASSERT_TRUE(store.ok()) << store.status().message();
  ASSERT_TRUE((*store)->save("r1", 1, "running", {{"n", 1}}).ok());
  fs::remove(fs::path(dir) / "runs.sqlite3");
  const Status st = (*store)->save("r1", 1, "done", {{"n", 2}});
  EXPECT_EQ(st.code(), Code::kInternal) << st.message();
  EXPECT_NE(st.message().find("the run database " + dir + "/runs.sqlite3 was removed"),
            std::string::npos)
      << st.message();
  EXPECT_FALSE((*store)->health().ok());
  store->reset();
  std::error_code ec;
  fs::remove_all(dir, ec);
}
#endif

#ifdef LIZARD_HAVE_SQLITE
// Not an injected failure: SQLite itself runs out of room (max_page_count on
// the store's connection) in the middle of a write.
TEST(SqliteRunStoreFull, ARealSqliteFullFailsTheWriteAndTheStoreRecovers) {
  std::string tmpl = (fs::temp_directory_path() / "lizard-run-store-f-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  auto open = [&] {
    auto store = RunStore::open_sqlite(dir);
    EXPECT_TRUE(store.ok()) << store.status().message();
    return store.ok() ? std::move(store).value() : nullptr;
  };
  const std::string big(256 * 1024, 'x');  // needs pages the database does not have
  auto expect_full = [](const Status& st, const std::string& what) {
    EXPECT_EQ(st.code(), Code::kStorageFull) << what << ": " << st.message();
    EXPECT_NE(st.message().find("the server's disk is full: " + what + " was not stored"),
              std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("--state-dir"), std::string::npos) << st.message();
  };
  auto expect_committed = [](RunStore& store) {
    auto runs = store.load_all();
    ASSERT_TRUE(runs.ok()) << runs.status().message();
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_EQ((*runs)[0].id, "r1");
    EXPECT_EQ((*runs)[0].record, json({{"n", 1}}));
    EXPECT_EQ((*runs)[0].request, kBody);
    ASSERT_TRUE((*runs)[0].checkpoint.has_value());
    EXPECT_EQ((*runs)[0].checkpoint->iteration, 1);
    EXPECT_EQ((*runs)[0].checkpoint->state, "s1");
  };
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->save("r1", 1, "running", {{"n", 1}}).ok());
  ASSERT_TRUE(store->save_request("r1", kBody).ok());
  ASSERT_TRUE(store->save_checkpoint("r1", {1, false, "s1", "a1"}).ok());

  ASSERT_TRUE(limit_sqlite_run_store_pages(*store, 1).ok());
  expect_full(store->save("r2", 2, "queued", {{"big", big}}), "run r2");
  expect_full(store->save_request("r1", {{"big", big}}), "the request of run r1");
  expect_full(store->save_checkpoint("r1", {2, false, big, big}), "the checkpoint of run r1");
  expect_full(store->save_blob("r1", "w", big), "field 'w' of run r1");  // a row: under 1 MiB
  // A finished run that does not fit changes nothing: it stays as it was.
  expect_full(store->save_finished("r1", 1, "done", {{"n", 2}}, {{"w", big}}),
              "field 'w' of run r1");
  expect_committed(*store);
  EXPECT_EQ(store->load_blob("r1", "w").status().code(), Code::kNotFound);
  store.reset();

  store = open();  // it opens, and holds what was committed before
  ASSERT_TRUE(store);
  expect_committed(*store);
  ASSERT_TRUE(limit_sqlite_run_store_pages(*store, 1).ok());
  expect_full(store->save("r2", 2, "queued", {{"big", big}}), "run r2");
  ASSERT_TRUE(limit_sqlite_run_store_pages(*store, 0).ok());  // room again
  ASSERT_TRUE(store->save("r2", 2, "queued", {{"big", big}}).ok());
  ASSERT_TRUE(store->save_checkpoint("r1", {2, false, big, "a2"}).ok());
  ASSERT_TRUE(store->save_blob("r1", "w", big).ok());
  store.reset();

  store = open();
  ASSERT_TRUE(store);
  auto runs = store->load_all();
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[1].record["big"], big);
  ASSERT_TRUE((*runs)[0].checkpoint.has_value());
  EXPECT_EQ((*runs)[0].checkpoint->state, big);
  EXPECT_EQ((*runs)[0].request, kBody);
  EXPECT_EQ(store->load_blob("r1", "w").value(), big);
}
#endif

// Built whole (no push_back into an empty vector, which GCC 13 warns about
// where only one backend is built).
INSTANTIATE_TEST_SUITE_P(Backends, RunStoreDurabilityTest,
                         ::testing::ValuesIn(run_store_backends()), run_store_backend_name);

}  // namespace
}  // namespace lizard
