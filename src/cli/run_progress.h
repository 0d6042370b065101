// How `lizard run` shows a run while it goes, from the run records it polls
// (GET /runtimes/<id>): on a terminal one line redrawn in place, with a bar,
// the iterations completed (the record's `iterations`), the rows done of the
// iteration under way where the run reports them, and the time left; into a
// pipe or file, a plain line whenever the status or the iteration changes (at
// most one a second).
//
//   ProgressPrinter p(&std::cerr, isatty(2));
//   while (...) p.update(record, seconds_since_submit);
//   p.finish();
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace lizard {

// What a record says about a run's advance.
struct RunProgress {
  std::string id;
  std::string status;
  std::string waiting_for;  // while queued: why no executor serves it yet
  // While running, before the first iteration: the specialised values its
  // workers are compiling for ("dims=2, k=4"); empty otherwise.
  std::string compiling;
  int64_t iterations = 0;  // completed
  int64_t max_iterations = 0;
  int64_t rows = 0;
  int64_t rows_done = 0;       // of the current iteration
  bool rows_reported = false;  // the run reports rows within an iteration
  double elapsed_s = 0;        // since it started running (0 while queued)

  // The share of the work done, 0 … 1, counting max_iterations as the whole.
  double fraction() const;
  // Seconds left at the pace so far; nullopt until something is done.  With
  // more than one iteration allowed it is an upper bound: runs may converge.
  std::optional<double> eta_s() const;
};

// `running_for_s`: seconds since the client saw the run start running.
RunProgress progress_of(const nlohmann::json& record, double running_for_s);

// "r3 running  [#######.....]  iterations 4/50  rows 1,024/2,048  0:03  ETA <= 0:07"
// (no rows where the run does not report them); while its workers compile:
// "r3 running  compiling dims=2, k=4 …  0:01"
// The columns `line` takes on a terminal: its UTF-8 characters ("…" is
// three bytes and one column).
size_t display_columns(const std::string& line);
std::string progress_bar_line(const RunProgress& p, int bar_width = 24);
// "r3: running, iterations 4/50, rows 1024/2048, 2.5 s"
std::string progress_plain_line(const RunProgress& p);

// "1 iteration", "2 iterations"
std::string iterations_text(int64_t n);
// Why a run that is done stopped, from its record: ", at its cap of 150
// iterations" when it ran max_iterations of them, ", stopped by its update
// hook" when it stopped before; "" for a one-pass run (a cap of 1).
std::string stop_reason_text(const nlohmann::json& record);
// ", 480 ms of it compiling its kernels for new values (4 of its 50
// iterations on a quick build, the rest on the optimised one)" for a run
// that waited for a compile; "" for one whose build came from a cache.
std::string compile_note(const nlohmann::json& record);
// "1,234,567"
std::string with_thousands(int64_t n);
// "0:07", "12:34", "1:02:03"
std::string clock_text(double seconds);

class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream* out, bool terminal) : out_(out), terminal_(terminal) {}
  void update(const nlohmann::json& record, double now_s);
  // Prints `lines` (each ending in '\n') above the progress: on a terminal
  // the redrawn line is cleared, and drawn again below them.
  void print_above(const std::string& lines);
  // Ends the redrawn line, so that what follows starts on a new one.
  void finish();

 private:
  std::ostream* out_;
  bool terminal_;
  std::optional<double> started_at_;  // when the run was first seen running
  std::string last_status_, last_waiting_for_;
  int64_t last_iteration_ = -1;
  double last_plain_s_ = -1;
  size_t drawn_ = 0;  // columns of the line on screen
  std::string line_;  // the line on screen
};

}  // namespace lizard
