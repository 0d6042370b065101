// For tests only: the run store's backends, for tests that run once per
// backend (SQLite where lizard is built with it, and the files store).
//
//   class MyTest : public ::testing::TestWithParam<RunStoreBackend> {};
//   TEST_P(MyTest, X) { auto store = GetParam().open(dir); ... }
//   INSTANTIATE_TEST_SUITE_P(Backends, MyTest, ::testing::ValuesIn(run_store_backends()),
//                            run_store_backend_name);
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "server/run_store.h"

namespace lizard {

struct RunStoreBackend {
  const char* name;
  Result<std::unique_ptr<RunStore>> (*open)(const std::string& state_dir);
};

inline void PrintTo(const RunStoreBackend& b, std::ostream* os) {
  *os << b.name;
}

inline std::vector<RunStoreBackend> run_store_backends() {
  return {
#ifdef LIZARD_HAVE_SQLITE
      {"Sqlite", &RunStore::open_sqlite},
#endif
      {"Files", &RunStore::open_files}};
}

inline std::string run_store_backend_name(const ::testing::TestParamInfo<RunStoreBackend>& info) {
  return info.param.name;
}

}  // namespace lizard
