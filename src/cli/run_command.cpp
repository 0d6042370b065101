#include "cli/run_command.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "cli/cluster_views.h"
#include "cli/dataset_staging.h"
#include "cli/program_loader.h"
#include "cli/recovery_notes.h"
#include "cli/run_progress.h"

namespace lizard {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::atomic<int> g_interrupts{0};

void on_interrupt(int) {
  g_interrupts.fetch_add(1);
}

// Counts SIGINTs while it lives, instead of letting the first one end the process.
class InterruptCounter {
 public:
  InterruptCounter() {
    g_interrupts = 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &previous_);
  }
  ~InterruptCounter() { sigaction(SIGINT, &previous_, nullptr); }
  int count() const { return g_interrupts.load(); }

 private:
  struct sigaction previous_ {};
};

bool finished(const std::string& status) {
  return status == "done" || status == "failed" || status == "cancelled";
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int report(const ServerApi& api, const json& record, const FollowOptions& o, const Console& c) {
  const std::string id = record.value("runtime_id", "");
  const std::string status = record.value("status", "");
  if (status == "done" && !o.out_dir.empty()) {
    if (Status s = write_fields(api, record, o.out_dir, c.err); !s.ok()) {
      *c.err << "lizard: " << id << " is done, but its fields were not written: " << s.message()
             << "\n";
      return 1;
    }
  }
  if (o.json) {
    *c.out << record.dump(2) << "\n";
  } else if (status == "done") {
    *c.out << id << " done: " << iterations_text(record.value("iterations", int64_t{0})) << " in "
           << duration_text(record.value("elapsed_ms", 0.0)) << compile_note(record)
           << stop_reason_text(record) << "\n"
           << result_lines(record, o.out_dir);
  }
  if (status == "done") return 0;
  *c.err << "lizard: " << id << " " << status << ": " << record.value("error", "no reason given")
         << "\n";
  return 1;
}

// Polls the record until the run ends; nullopt (after saying why) when the
// server stays unreachable or stops knowing the run, or on a second Ctrl-C.
// What the run printed, shown above the progress as it arrives: its log
// (GET /runtimes/<id>/logs) asked for at most twice a second, and once more
// at the end.  A server without the route is asked no more.
class LogTail {
 public:
  LogTail(const ServerApi& api, std::string id) : api_(api), id_(std::move(id)) {}
  void poll(ProgressPrinter* progress, bool last) {
    if (gone_ || (!last && seconds_since(asked_) < 0.5)) return;
    asked_ = Clock::now();
    auto reply = api_.send("GET", "/runtimes/" + id_ + "/logs", "", 30);
    if (!reply.ok()) return;
    if (reply->status == 404) gone_ = true;
    if (reply->status != 200 || reply->body.size() <= shown_) return;
    progress->print_above(reply->body.substr(shown_));
    shown_ = reply->body.size();
  }

 private:
  const ServerApi& api_;
  const std::string id_;
  Clock::time_point asked_{};
  size_t shown_ = 0;  // bytes of the log printed: it only grows at its end
  bool gone_ = false;
};

std::optional<json> poll_until_finished(const ServerApi& api, const std::string& id,
                                        const FollowOptions& o, const Console& c,
                                        const InterruptCounter& interrupts) {
  const auto t0 = Clock::now();
  ProgressPrinter progress(c.err, c.terminal);
  LogTail log(api, id);
  RecoveryNotes recoveries;
  Clock::time_point unreachable_since{};  // the epoch while it answers
  int handled_interrupts = 0;
  auto interval = std::chrono::milliseconds(5);
  while (true) {
    if (interrupts.count() > handled_interrupts) {
      progress.finish();
      if (++handled_interrupts > 1) {
        *c.err << "lizard: stopped waiting; " << id << " goes on being cancelled\n";
        return std::nullopt;
      }
      *c.err << "lizard: cancelling " << id << " (Ctrl-C again to stop waiting)\n";
      (void)api.del("/runtimes/" + id);
    }
    // The server holds the answer until the run ends or `interval` passes,
    // so its end is seen at once however long the interval.
    const auto asked = Clock::now();
    auto record = api.get("/runtimes/" + id + "?wait_ms=" + std::to_string(interval.count()));
    if (!record.ok()) {
      const bool unreachable = record.status().code() == Code::kUnavailable;
      if (unreachable && unreachable_since == Clock::time_point{}) unreachable_since = Clock::now();
      if (!unreachable || seconds_since(unreachable_since) >= o.lost_server_s) {
        progress.finish();
        *c.err << "lizard: lost track of " << id << ": " << record.status().message() << "\n";
        return std::nullopt;
      }
    } else {
      unreachable_since = {};
      const bool done = finished(record->value("status", ""));
      if (!o.quiet) {
        log.poll(&progress, done);
        const std::string notes = recoveries.new_lines(*record, seconds_since(t0));
        if (!notes.empty()) progress.print_above(notes);
        progress.update(*record, seconds_since(t0));
      }
      if (done) {
        progress.finish();
        return record.value();
      }
    }
    // A long run is asked less and less often, down to four times a second
    // (a server that answered sooner than asked, or not at all, is waited for here).
    std::this_thread::sleep_until(asked + interval);
    if (seconds_since(t0) >= 1.0) interval = std::min(interval * 2, std::chrono::milliseconds(250));
  }
}

}  // namespace

Status write_fields(const ServerApi& api, const json& record, const std::string& dir,
                    std::ostream* log) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return internal_error("cannot create " + dir + ": " + ec.message());
  std::string written;
  const json fields = record.value("fields", json::object());
  for (const auto& [name, path] : fields.items()) {
    const std::string file = (std::filesystem::path(dir) / (name + ".npy")).string();
    LIZARD_RETURN_IF_ERROR(api.download(path.get<std::string>(), file));
    written += (written.empty() ? "" : " ") + name + ".npy";
  }
  if (log) *log << "wrote " << (written.empty() ? "no fields" : written) << " to " << dir << "\n";
  return Status::Ok();
}

int follow_run(const ServerApi& api, const std::string& id, const FollowOptions& o,
               const Console& c) {
  InterruptCounter interrupts;
  auto record = poll_until_finished(api, id, o, c, interrupts);
  if (!record) {
    if (interrupts.count() == 0)
      *c.err << "lizard: `lizard status " << id << "` shows the run once the server answers\n";
    return interrupts.count() > 0 ? 130 : 1;
  }
  const int status = report(api, *record, o, c);
  return interrupts.count() > 0 && status != 0 ? 130 : status;
}

int run_program(const ServerApi& api, const RunOptions& o, const Console& c) {
  if (Status up = api.wait_until_up(o.server_wait_s, o.follow.quiet ? nullptr : c.err); !up.ok()) {
    *c.err << "lizard: " << up.message() << "\n";
    return 1;
  }
  std::error_code ec;
  if (!o.follow.quiet && std::filesystem::is_directory(o.program, ec))
    *c.err << "registering " << o.program << " (every worker builds it)\n";
  auto program = resolve_program(api, o.program, o.build_timeout_s);
  if (!program.ok()) {
    *c.err << "lizard: " << program.status().message() << "\n";
    return 1;
  }
  if (!o.follow.quiet)
    *c.err << "program " << program->manifest.name << " (" << program->hash.substr(0, 12) << ")\n";
  auto staged =
      stage_datasets(api, program->manifest, o.spec, o.files, o.follow.quiet ? nullptr : c.err);
  if (!staged.ok()) {
    *c.err << "lizard: " << staged.status().message() << "\n";
    return 1;
  }
  json body = o.spec.request_without_dataset();
  if (!staged->dataset.empty()) body["dataset"] = staged->dataset;
  auto queued = api.post("/runtime/" + program->hash, body);
  if (!queued.ok()) {
    remove_uploads(api, staged->uploads);
    *c.err << "lizard: the run was refused: " << queued.status().message() << "\n";
    return 1;
  }
  const std::string id = queued->value("runtime_id", "");
  if (o.detach) {
    *c.out << id << "\n";
    if (!staged->uploads.empty() && !o.follow.quiet)
      *c.err << "the uploaded datasets stay on the server (GET /datasets lists them)\n";
    return 0;
  }
  const int status = follow_run(api, id, o.follow, c);
  if (!o.keep_uploads) remove_uploads(api, staged->uploads);
  return status;
}

}  // namespace lizard
