#include "cli/run_progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/cluster_views.h"

namespace lizard {

using nlohmann::json;

double RunProgress::fraction() const {
  if (status == "done") return 1;
  if (max_iterations <= 0) return 0;
  double current = rows > 0 ? static_cast<double>(rows_done) / static_cast<double>(rows) : 0;
  double f = (static_cast<double>(iterations) + std::min(current, 1.0)) /
             static_cast<double>(max_iterations);
  return std::clamp(f, 0.0, 1.0);
}

std::optional<double> RunProgress::eta_s() const {
  const double f = fraction();
  if (status != "running" || f <= 0 || elapsed_s <= 0) return std::nullopt;
  return elapsed_s * (1 - f) / f;
}

RunProgress progress_of(const json& record, double running_for_s) {
  RunProgress p;
  p.id = record.value("runtime_id", "");
  p.status = record.value("status", "");
  p.waiting_for = record.value("waiting_for", "");
  p.iterations = record.value("iterations", int64_t{0});
  p.max_iterations = record.value("max_iterations", int64_t{0});
  p.rows = record.value("rows", int64_t{0});
  p.elapsed_s = running_for_s;
  if (record.contains("progress") && record["progress"].is_object()) {
    const json& pr = record["progress"];
    p.rows_reported = pr.value("rows_reported", false);
    // Rows done belong to the iteration under way; once it has completed,
    // `iterations` counts it.
    if (p.rows_reported && pr.value("iteration", int64_t{-1}) == p.iterations)
      p.rows_done = pr.value("rows_done", int64_t{0});
  }
  if (p.status == "done") p.rows_done = p.rows;
  if (p.status == "running" && p.waiting_for == "compile") {
    const json values = record.value("specialised", json::object());
    for (const auto& [name, value] : values.items())
      p.compiling += (p.compiling.empty() ? "" : ", ") + name + "=" + value.dump();
    const std::string build = record.value("compiling_build", "");
    if (p.compiling.empty())
      p.compiling = build.empty() ? "the kernels" : "the kernels' " + build + " build";
    else if (!build.empty())
      p.compiling = "the " + build + " build of " + p.compiling;
  }
  return p;
}

std::string iterations_text(int64_t n) {
  return std::to_string(n) + (n == 1 ? " iteration" : " iterations");
}

std::string stop_reason_text(const json& record) {
  const int64_t cap = record.value("max_iterations", int64_t{0});
  const int64_t done = record.value("iterations", int64_t{0});
  if (cap <= 1) return "";
  if (done >= cap) return ", at its cap of " + iterations_text(cap);
  return ", stopped by its update hook";
}

std::string with_thousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string clock_text(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  return buf;
}

namespace {

std::string waiting_text(const RunProgress& p) {
  if (p.waiting_for.empty()) return "waiting for executors";
  return p.waiting_for + "; `lizard workers` lists the workers";
}

}  // namespace

std::string progress_bar_line(const RunProgress& p, int bar_width) {
  std::string line = p.id + " " + p.status;
  if (p.status == "queued") return line + "  (" + waiting_text(p) + ")";
  if (!p.compiling.empty())
    return line + "  compiling " + p.compiling + " …  " + clock_text(p.elapsed_s);
  const int filled = static_cast<int>(std::floor(p.fraction() * bar_width));
  line += "  [" + std::string(static_cast<size_t>(filled), '#') +
          std::string(static_cast<size_t>(bar_width - filled), '.') + "]";
  line += "  iterations " + std::to_string(p.iterations) + "/" + std::to_string(p.max_iterations);
  if (p.rows_reported)
    line += "  rows " + with_thousands(p.rows_done) + "/" + with_thousands(p.rows);
  line += "  " + clock_text(p.elapsed_s);
  if (auto eta = p.eta_s())
    line += std::string("  ETA ") + (p.max_iterations > 1 ? "<= " : "") + clock_text(*eta);
  return line;
}

std::string progress_plain_line(const RunProgress& p) {
  std::string line = p.id + ": " + p.status;
  if (p.status == "queued")
    return p.waiting_for.empty() ? line : line + " (" + waiting_text(p) + ")";
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.1f s", p.elapsed_s);
  if (!p.compiling.empty()) return line + ", compiling " + p.compiling + " …, " + elapsed;
  line += ", iterations " + std::to_string(p.iterations) + "/" + std::to_string(p.max_iterations);
  if (p.rows_reported)
    line += ", rows " + std::to_string(p.rows_done) + "/" + std::to_string(p.rows);
  return line + ", " + elapsed;
}

size_t display_columns(const std::string& line) {
  size_t columns = 0;
  for (unsigned char c : line) columns += (c & 0xC0) != 0x80;  // UTF-8: count lead bytes
  return columns;
}

void ProgressPrinter::update(const json& record, double now_s) {
  const std::string status = record.value("status", "");
  if (status == "running" && !started_at_) started_at_ = now_s;
  const RunProgress p = progress_of(record, started_at_ ? now_s - *started_at_ : 0);
  if (terminal_) {
    std::string line = progress_bar_line(p);
    const size_t width = display_columns(line);
    if (width < drawn_) line += std::string(drawn_ - width, ' ');
    *out_ << '\r' << line << std::flush;
    drawn_ = width;
    line_ = std::move(line);
    return;
  }
  const bool changed = status != last_status_ || p.iterations != last_iteration_;
  const bool news = status != last_status_ || p.waiting_for != last_waiting_for_;
  if (!changed && !news) return;
  if (!news && now_s - last_plain_s_ < 1) return;
  *out_ << progress_plain_line(p) << "\n" << std::flush;
  last_status_ = status;
  last_waiting_for_ = p.waiting_for;
  last_iteration_ = p.iterations;
  last_plain_s_ = now_s;
}

void ProgressPrinter::print_above(const std::string& lines) {
  if (!terminal_ || drawn_ == 0) {
    *out_ << lines << std::flush;
    return;
  }
  *out_ << '\r' << std::string(drawn_, ' ') << '\r' << lines << line_ << std::flush;
}

void ProgressPrinter::finish() {
  if (terminal_ && drawn_ > 0) *out_ << "\n" << std::flush;
  drawn_ = 0;
  line_.clear();
}

// ", 480 ms of it compiling its kernels for new values" when the run waited
// for a compile (its record's phases.compile_ms), so that a slow first run
// says why, and how many iterations ran on the quick build
// (phases.quick_build_iterations); "" when its build came from a cache.
std::string compile_note(const nlohmann::json& record) {
  const nlohmann::json phases = record.value("phases", nlohmann::json::object());
  const double ms = phases.is_object() ? phases.value("compile_ms", 0.0) : 0.0;
  if (!(ms > 0)) return "";
  std::string note = ", " + duration_text(ms) + " of it compiling its kernels for new values";
  if (!phases.value("quick_build", false)) return note;
  const int64_t quick = phases.value("quick_build_iterations", int64_t{0});
  const int64_t all = record.value("iterations", int64_t{0});
  return note + " (" + std::to_string(quick) + " of its " + iterations_text(all) +
         " on a quick build, the rest on the optimised one)";
}

}  // namespace lizard
