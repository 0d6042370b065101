#include "cli/run_progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace lizard {
namespace {

using nlohmann::json;

json running(int iterations, int progress_iteration, int rows_done) {
  return {{"runtime_id", "r3"},
          {"status", "running"},
          {"iterations", iterations},
          {"max_iterations", 10},
          {"rows", 2000},
          {"progress",
           {{"iteration", progress_iteration},
            {"rows", 2000},
            {"rows_done", rows_done},
            {"rows_reported", true}}}};
}

// An iterative run: its workers report whole iterations, not rows.
json iterating(int iterations) {
  json r = running(iterations, iterations, 0);
  r["progress"]["rows_reported"] = false;
  return r;
}

TEST(RunProgress, FractionCountsIterationsAndRowsOfTheCurrentOne) {
  RunProgress p = progress_of(running(4, 4, 1000), 9.0);
  EXPECT_EQ(p.rows_done, 1000);
  EXPECT_DOUBLE_EQ(p.fraction(), 0.45);
  ASSERT_TRUE(p.eta_s());
  EXPECT_NEAR(*p.eta_s(), 9.0 * 0.55 / 0.45, 1e-9);
  // Rows reported for an iteration that has completed belong to no current one.
  EXPECT_EQ(progress_of(running(5, 4, 2000), 1).rows_done, 0);
  EXPECT_FALSE(progress_of(running(0, 0, 0), 1).eta_s());  // nothing done yet
  json queued = {{"runtime_id", "r3"}, {"status", "queued"}, {"max_iterations", 10}};
  EXPECT_FALSE(progress_of(queued, 0).eta_s());
  json done = {{"status", "done"}, {"iterations", 3}, {"max_iterations", 10}, {"rows", 5}};
  EXPECT_DOUBLE_EQ(progress_of(done, 1).fraction(), 1.0);
  EXPECT_EQ(progress_of(done, 1).rows_done, 5);
}

TEST(RunProgress, BarLineShowsIterationRowsTimeAndAnUpperBoundEta) {
  EXPECT_EQ(progress_bar_line(progress_of(running(4, 4, 1000), 9.0), 20),
            "r3 running  [#########...........]  iterations 4/10  rows 1,000/2,000  0:09  ETA <= "
            "0:11");
  json one = running(0, 0, 500);
  one["max_iterations"] = 1;
  EXPECT_EQ(progress_bar_line(progress_of(one, 3.0), 4),
            "r3 running  [#...]  iterations 0/1  rows 500/2,000  0:03  ETA 0:09");
  json queued = {{"runtime_id", "r3"}, {"status", "queued"}};
  EXPECT_EQ(progress_bar_line(progress_of(queued, 0)), "r3 queued  (waiting for executors)");
}

TEST(RunProgress, PlainLines) {
  EXPECT_EQ(progress_plain_line(progress_of(running(4, 4, 1000), 2.5)),
            "r3: running, iterations 4/10, rows 1000/2000, 2.5 s");
  json queued = {{"runtime_id", "r3"}, {"status", "queued"}};
  EXPECT_EQ(progress_plain_line(progress_of(queued, 0)), "r3: queued");
}

// A run that compiled says for how long, and how many iterations ran on
// the quick build its GPUs began on.
TEST(RunProgress, TheCompileNoteSaysHowLongAndHowManyIterationsRanOnTheQuickBuild) {
  EXPECT_EQ(compile_note(json{{"phases", {{"compile_ms", 0.0}}}}), "");
  EXPECT_EQ(compile_note(json{{"iterations", 50}, {"phases", {{"compile_ms", 480.0}}}}),
            ", 480 ms of it compiling its kernels for new values");
  json quick = {
      {"iterations", 50},
      {"phases", {{"compile_ms", 120.0}, {"quick_build", true}, {"quick_build_iterations", 4}}}};
  EXPECT_EQ(compile_note(quick),
            ", 120 ms of it compiling its kernels for new values (4 of its 50 iterations on a "
            "quick build, the rest on the optimised one)");
}

TEST(RunProgress, NumbersAndClocks) {
  EXPECT_EQ(with_thousands(0), "0");
  EXPECT_EQ(with_thousands(999), "999");
  EXPECT_EQ(with_thousands(1000), "1,000");
  EXPECT_EQ(with_thousands(1234567), "1,234,567");
  EXPECT_EQ(with_thousands(-1234), "-1,234");
  EXPECT_EQ(clock_text(0), "0:00");
  EXPECT_EQ(clock_text(7.4), "0:07");
  EXPECT_EQ(clock_text(754), "12:34");
  EXPECT_EQ(clock_text(3723), "1:02:03");
}

TEST(RunProgress, PipedOutputGetsALineWhenStatusOrIterationChanges) {
  std::ostringstream out;
  ProgressPrinter p(&out, /*terminal=*/false);
  json q = {{"runtime_id", "r3"}, {"status", "queued"}, {"max_iterations", 10}};
  p.update(q, 0.0);
  p.update(q, 0.5);                   // unchanged: no line
  p.update(running(0, 0, 0), 1.0);    // status changed
  p.update(running(1, 1, 0), 1.5);    // iteration changed, but within a second
  p.update(running(1, 1, 100), 2.1);  // now it is shown
  p.update(running(1, 1, 200), 3.5);  // unchanged iteration: no line
  p.finish();
  EXPECT_EQ(out.str(),
            "r3: queued\n"
            "r3: running, iterations 0/10, rows 0/2000, 0.0 s\n"
            "r3: running, iterations 1/10, rows 100/2000, 1.1 s\n");
}

TEST(RunProgress, TerminalOutputRedrawsOneLine) {
  std::ostringstream out;
  ProgressPrinter p(&out, /*terminal=*/true);
  p.update({{"runtime_id", "r3"}, {"status", "queued"}}, 0.0);
  p.update(running(0, 0, 1000), 2.0);
  p.finish();
  const std::string s = out.str();
  EXPECT_EQ(s.front(), '\r');
  EXPECT_EQ(s.back(), '\n');
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);
  EXPECT_EQ(std::count(s.begin(), s.end(), '\r'), 2);
  EXPECT_NE(s.find("iterations 0/10  rows 1,000/2,000"), std::string::npos) << s;
}

// The bar counts the iterations the record counts, so that the last line
// drawn and the final record name the same number.
TEST(RunProgress, IterationsShownAreTheRecordsCompletedOnes) {
  json r = iterating(251);
  r["max_iterations"] = 300;
  EXPECT_EQ(progress_bar_line(progress_of(r, 40.0), 4),
            "r3 running  [###.]  iterations 251/300  0:40  ETA <= 0:08");
  json done = iterating(2);
  done["status"] = "done";
  EXPECT_EQ(progress_plain_line(progress_of(done, 1.0)), "r3: done, iterations 2/10, 1.0 s");
  json cancelled = iterating(3);
  cancelled["status"] = "cancelled";
  EXPECT_EQ(progress_plain_line(progress_of(cancelled, 1.0)),
            "r3: cancelled, iterations 3/10, 1.0 s");
}

// An iterative run shows no rows: they would stay at 0 for the whole run.
TEST(RunProgress, IterativeRunsShowNoRows) {
  const RunProgress p = progress_of(iterating(4), 8.0);
  EXPECT_FALSE(p.rows_reported);
  EXPECT_EQ(progress_bar_line(p, 10),
            "r3 running  [####......]  iterations 4/10  0:08  ETA <= 0:12");
  EXPECT_EQ(progress_plain_line(p), "r3: running, iterations 4/10, 8.0 s");
  json old = running(4, 4, 100);
  old["progress"].erase("rows_reported");
  EXPECT_FALSE(progress_of(old, 1).rows_reported);
}

// A queued run that no worker can serve says why at once, on a terminal and
// into a pipe, and names the command that lists the workers.
TEST(RunProgress, QueuedRunsSayWhatTheyWaitFor) {
  json q = {{"runtime_id", "r3"}, {"status", "queued"}, {"waiting_for", "no worker is connected"}};
  EXPECT_EQ(progress_bar_line(progress_of(q, 0)),
            "r3 queued  (no worker is connected; `lizard workers` lists the workers)");
  std::ostringstream out;
  ProgressPrinter p(&out, /*terminal=*/false);
  json plain = {{"runtime_id", "r3"}, {"status", "queued"}};
  p.update(plain, 0.0);
  p.update(q, 0.1);  // the reason arrived: shown at once
  p.update(q, 0.2);
  p.finish();
  EXPECT_EQ(out.str(),
            "r3: queued\n"
            "r3: queued (no worker is connected; `lizard workers` lists the workers)\n");
}

// While the workers compile the run's specialised values, the line says so
// instead of showing an empty bar.
TEST(RunProgress, ACompilingRunNamesItsSpecialisedValues) {
  json r = running(0, -1, 0);
  r["waiting_for"] = "compile";
  r["specialised"] = {{"dims", 2}, {"k", 4}};
  EXPECT_EQ(progress_bar_line(progress_of(r, 1.0)), "r3 running  compiling dims=2, k=4 …  0:01");
  std::ostringstream out;
  ProgressPrinter p(&out, /*terminal=*/false);
  p.update(r, 0.0);
  p.update(running(0, 0, 0), 0.5);  // compiled: the iterations start at once
  p.finish();
  EXPECT_EQ(out.str(),
            "r3: running, compiling dims=2, k=4 …, 0.0 s\n"
            "r3: running, iterations 0/10, rows 0/2000, 0.5 s\n");
}

// With the build its workers compile, the line names it: the quick build
// the run begins on, or the optimised one it waits for.
TEST(RunProgress, ACompilingRunNamesTheBuildItWaitsFor) {
  json r = running(0, -1, 0);
  r["waiting_for"] = "compile";
  r["specialised"] = {{"k", 4}};
  r["compiling_build"] = "quick";
  EXPECT_EQ(progress_bar_line(progress_of(r, 1.0)),
            "r3 running  compiling the quick build of k=4 …  0:01");
  r["compiling_build"] = "optimised";
  r["specialised"] = json::object();
  EXPECT_EQ(progress_bar_line(progress_of(r, 1.0)),
            "r3 running  compiling the kernels' optimised build …  0:01");
}

// A redrawn line covers the whole of the one before it, counted in columns:
// "…" is three bytes but one column.
TEST(RunProgress, ARedrawCoversTheLastLineByItsColumns) {
  EXPECT_EQ(display_columns("k=4 …  0:01"), 11u);
  std::ostringstream out;
  ProgressPrinter p(&out, /*terminal=*/true);
  json compiling = running(0, -1, 0);
  compiling["waiting_for"] = "compile";
  compiling["specialised"] = {{"dims", 2}, {"k", 4}};
  p.update(running(0, 0, 1000), 0.0);
  p.update(compiling, 1.0);
  const std::string s = out.str();
  const std::string first = s.substr(1, s.rfind('\r') - 1);
  const std::string second = s.substr(s.rfind('\r') + 1);
  EXPECT_GE(display_columns(second), display_columns(first)) << s;
}

TEST(RunProgress, IterationsTextCountsOneInTheSingular) {
  EXPECT_EQ(iterations_text(0), "0 iterations");
  EXPECT_EQ(iterations_text(1), "1 iteration");
  EXPECT_EQ(iterations_text(2), "2 iterations");
}

TEST(ProgressPrinter, LinesPrintedAboveTheProgressLeaveItRedrawnBelow) {
  std::ostringstream term;
  ProgressPrinter p(&term, true);
  p.update({{"id", "r1"}, {"status", "queued"}}, 0);
  const std::string drawn = term.str().substr(1);  // after its '\r'
  p.print_above("[w1 e0 it 0] hello\n");
  EXPECT_EQ(term.str(), "\r" + drawn + "\r" + std::string(display_columns(drawn), ' ') +
                            "\r[w1 e0 it 0] hello\n" + drawn);
  std::ostringstream pipe;
  ProgressPrinter plain(&pipe, false);
  plain.print_above("[w1 e0 it 0] hello\n");
  EXPECT_EQ(pipe.str(), "[w1 e0 it 0] hello\n");
}

TEST(RunProgressText, TheStopReasonSaysCapOrHookAndNothingForOnePass) {
  using nlohmann::json;
  EXPECT_EQ(stop_reason_text(json{{"iterations", 150}, {"max_iterations", 150}}),
            ", at its cap of 150 iterations");
  EXPECT_EQ(stop_reason_text(json{{"iterations", 2}, {"max_iterations", 50}}),
            ", stopped by its update hook");
  EXPECT_EQ(stop_reason_text(json{{"iterations", 1}, {"max_iterations", 1}}), "");
  EXPECT_EQ(stop_reason_text(json{{"iterations", 3}}), "");  // a record without its cap
}

}  // namespace
}  // namespace lizard
