// What the run store's two backends share (run_store.cpp: JSON files,
// run_store_sqlite.cpp: SQLite): name checks, atomic file writes and the
// SQLite backend's factory.  Internal to RunStore; nothing else includes it.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <string>

#include "common/status.h"
#include "server/run_store.h"

namespace lizard::run_store_detail {

// Records carry text from outside (compiler and worker messages), so bytes
// that are not UTF-8 are replaced rather than refused.
std::string to_text(const nlohmann::json& j);
// Run ids and field names become file names: they must not reach outside
// their directory.
Status check_name(const std::string& what, const std::string& name);
// Writes `bytes` to a fresh temporary file beside `path`, flushes it to disk
// and renames it over `path`, so readers see the old or the new content.  A
// full disk gives Code::kStorageFull.
Status write_file_atomically(const std::filesystem::path& path, const std::string& bytes);
Status create_dirs(const std::filesystem::path& dir);
Result<std::string> read_file(const std::filesystem::path& path);
// The file's bytes up to its first line break (all of them where it has none).
Result<std::string> read_first_line(const std::filesystem::path& path);
std::filesystem::path runs_dir(const std::string& state_dir);
// Creates the store's directories and proves they are writable, so that a
// bad --state-dir is reported at startup rather than at the first run.
Status prepare_state_dir(const std::string& state_dir);

#ifdef LIZARD_HAVE_SQLITE
Result<std::unique_ptr<RunStore>> open_sqlite_store(const std::string& state_dir);
#endif

}  // namespace lizard::run_store_detail
