// Text views of what the server reports, for `lizard runs`, `lizard status`,
// `lizard workers` and the end of `lizard run`: pure functions from the
// server's JSON (GET /runtimes, /runtimes/<id>, /clients, /programs) to lines
// for people.  --json prints the JSON itself instead.
//
//   std::cout << runs_table(api.get("/runtimes").value());
#pragma once

#include <nlohmann/json.hpp>

#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace lizard {

// One line per run: id, status, program, iterations, rows, created, elapsed
// (for a running run, the time since it started, as of `now`).
std::string runs_table(const nlohmann::json& runs, std::time_t now = std::time(nullptr));

// Seconds since the epoch of a record's UTC time ("2026-11-22T03:30:01Z");
// nullopt when it is not one.
std::optional<std::time_t> parse_utc(const std::string& iso);

// A run record as labelled lines: program, times, iterations, rows, where it
// ran, the error or the result, and the fields it has for download.
std::string run_summary(const nlohmann::json& record);

// A finished run's state and aggregate values, one `name = value` line each;
// values too long for a line are given by their shape instead, and where
// they were written when `out_dir` is given.
std::string result_lines(const nlohmann::json& record, const std::string& out_dir = "");

// Each worker with its host, backend, executors (free memory, the run each
// serves) and the programs it has built (named from `programs`).
std::string workers_view(const nlohmann::json& clients, const nlohmann::json& programs);

// Rows of cells, columns padded to their widest cell, two spaces apart.
std::string text_table(const std::vector<std::vector<std::string>>& rows);

// "1.5 GiB", "512 MiB", "12 KiB", "17 B"
std::string bytes_text(uint64_t bytes);

// "1.23 s", "45 ms", "2:03"
std::string duration_text(double ms);

}  // namespace lizard
