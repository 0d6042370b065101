// For tests only: makes the SQLite run store meet a real SQLITE_FULL.
//
// max_page_count is a setting of one connection, so it must be set on the
// store's own: this caps that connection's database at `max_pages` pages
// (SQLite never caps below the database's current size), so that a write
// needing a new page fails inside SQLite as it would on a full disk.
//
//   ASSERT_TRUE(limit_sqlite_run_store_pages(*store, 1).ok());  // no room to grow
//   store->save(...);                                           // kStorageFull
//   ASSERT_TRUE(limit_sqlite_run_store_pages(*store, 0).ok());  // room again
//
// A server process started with LIZARD_TEST_SQLITE_MAX_PAGES=N caps its store
// so when it opens it (N=1: at the size it has then).
#pragma once

#include <cstdint>

#include "common/status.h"
#include "server/run_store.h"

namespace lizard {

// 0 lifts the cap.  An error for a store that is not SQLite's.
Status limit_sqlite_run_store_pages(RunStore& store, uint64_t max_pages);

}  // namespace lizard
