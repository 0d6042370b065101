#include "server/run_logs.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runlog/log_format.h"
#include "runlog/output_lines.h"

namespace lizard {

namespace fs = std::filesystem;

RunLogs::RunLogs(std::string state_dir) : state_dir_(std::move(state_dir)) {
  writer_ = std::thread([this] { write_loop(); });
}

RunLogs::~RunLogs() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  queued_cv_.notify_all();
  writer_.join();
}

void RunLogs::add(const std::string& run_id, const std::string& source,
                  const std::vector<LogLine>& lines) {
  if (lines.empty()) return;
  std::lock_guard<std::mutex> l(mu_);
  OutputBound& bound = bounds_[run_id][source];
  std::string text;
  for (const LogLine& line : lines) {
    if (!bound.admit(line.text.size() + 1)) continue;
    text += log_line(source, line.executor, line.iteration, line.text);
    text += '\n';
  }
  queue(run_id, text);
}

void RunLogs::note_cut(const std::string& run_id, const std::string& source, uint64_t cut_lines,
                       uint64_t cut_bytes) {
  std::lock_guard<std::mutex> l(mu_);
  OutputBound& bound = bounds_[run_id][source];
  bound.add_cut(cut_lines, cut_bytes);
  if (bound.cut_lines() == 0) return;
  const char* per =
      source == kServerLogSource ? "per run for the server's hooks" : "per run per worker";
  queue(run_id, log_note(source, bound.cut_notice(per)) + "\n");
  bounds_[run_id].erase(source);  // a later attempt of the run starts anew
}

std::function<void(int64_t, const OutputPipe::Taken&)> RunLogs::hook_output(
    const std::string& run_id) {
  return [this, run_id](int64_t iteration, const OutputPipe::Taken& printed) {
    std::vector<LogLine> lines;
    OutputLines split;
    auto keep = [&](std::string text) { lines.push_back({-1, iteration, std::move(text)}); };
    split.add(printed.bytes, keep);
    split.finish(keep);
    add(run_id, kServerLogSource, lines);
    if (printed.dropped > 0) {
      std::lock_guard<std::mutex> l(mu_);
      bounds_[run_id][kServerLogSource].add_cut(1, printed.dropped);
    }
  };
}

void RunLogs::forget(const std::string& run_id) {
  std::lock_guard<std::mutex> l(mu_);
  bounds_.erase(run_id);
}

void RunLogs::queue(const std::string& run_id, const std::string& text) {
  if (text.empty()) return;
  queued_[run_id] += text;
  queued_cv_.notify_one();
}

Result<std::string> RunLogs::read(const std::string& run_id, const std::string& source) const {
  std::lock_guard<std::mutex> w(write_mu_);
  std::string all;
  {
    std::ifstream in(path_of(run_id), std::ios::binary);
    if (in) {
      std::ostringstream s;
      s << in.rdbuf();
      all = s.str();
    } else if (errno != ENOENT && fs::exists(path_of(run_id))) {
      return internal_error("cannot read " + path_of(run_id) + ": " + std::strerror(errno));
    }
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = queued_.find(run_id); it != queued_.end()) all += it->second;
  }
  if (source.empty()) return all;
  std::string mine;
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\n', start);
    end = end == std::string::npos ? all.size() : end + 1;
    const std::string_view line(all.data() + start, end - start);
    if (log_line_from(line, source)) mine.append(line);
    start = end;
  }
  return mine;
}

void RunLogs::write_loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      queued_cv_.wait(l, [&] { return stopping_ || !queued_.empty(); });
      if (stopping_ && queued_.empty()) return;
    }
    std::lock_guard<std::mutex> w(write_mu_);
    write_queued();
  }
}

void RunLogs::write_queued() {
  std::map<std::string, std::string> batch;
  {
    std::lock_guard<std::mutex> l(mu_);
    batch.swap(queued_);
  }
  for (const auto& [run_id, text] : batch) {
    std::error_code ec;
    fs::create_directories(fs::path(path_of(run_id)).parent_path(), ec);
    std::ofstream out(path_of(run_id), std::ios::binary | std::ios::app);
    out << text;
    out.flush();
    if (!out)
      spdlog::warn("run {}: cannot keep {} bytes of its output in {}", run_id, text.size(),
                   path_of(run_id));
  }
}

std::string RunLogs::path_of(const std::string& run_id) const {
  return (fs::path(state_dir_) / "runs" / run_id / "output.log").string();
}

}  // namespace lizard
