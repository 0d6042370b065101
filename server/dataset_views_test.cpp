// GET /datasets: the uploads, and every joined worker's kept rows as last
// reported, with their source and range and whether a run holds the executor.
#include "server/dataset_views.h"

#include <gtest/gtest.h>

#include "dataset/test_files.h"
#include "server/dataset_store.h"
#include "server/testing/fakes.h"
#include "server/worker_registry.h"

namespace lizard {
namespace {

using nlohmann::json;
using testing::FakeWorkerLink;

TEST(DatasetViews, ListsUploadsAndTheRowsEachExecutorKeeps) {
  TempDir dir;
  DatasetStore store(dir.path());
  WorkerRegistry workers;
  HelloMsg h;
  h.executors.resize(2);
  const std::string id = workers.connect(std::make_shared<FakeWorkerLink>());
  ASSERT_TRUE(workers.hello(id, h, {}));
  EXPECT_EQ(datasets_view(store, workers),
            json({{"uploads", json::array()}, {"kept", json::array()}}));
  ResourcesMsg r;
  r.free_memory = {1, 1};
  r.kept = {{{"file:k", "/d/x.npy rows 0..10 (float32 x 2)", 80, "/d/x.npy", 0, 10}},
            {{"old", "old", 0}}};
  workers.resources(id, r);
  ASSERT_TRUE(workers.claim({{id, 1}}, "r7"));
  const json kept = datasets_view(store, workers)["kept"];
  ASSERT_EQ(kept.size(), 2u) << kept.dump();
  EXPECT_EQ(kept[0], json({{"worker", id},
                           {"executor", 0},
                           {"source", "/d/x.npy"},
                           {"rows", {0, 10}},
                           {"bytes", 80},
                           {"in_use", false},
                           {"key", "file:k"},
                           {"description", "/d/x.npy rows 0..10 (float32 x 2)"}}));
  EXPECT_EQ(kept[1]["in_use"], true);
  EXPECT_EQ(kept[1]["source"], nullptr);  // a report without one
}

}  // namespace
}  // namespace lizard
