#include "common/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace lizard {

namespace {

std::string read_text(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// btime from /proc/stat: the boot time in Unix seconds.
std::optional<double> boot_time() {
  std::istringstream lines(read_text("/proc/stat"));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  return std::nullopt;
}

std::optional<uint64_t> count_open_fds() {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  uint64_t n = 0;
  while (const dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n > 0 ? n - 1 : 0;  // less the descriptor that reads the directory
}

}  // namespace

ProcessSample parse_proc_stat(const std::string& stat, long ticks_per_s, long page_bytes,
                              std::optional<double> boot_time_s) {
  ProcessSample s;
  // The command name (field 2) is in parentheses and may hold spaces: the
  // fields after it start past the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || ticks_per_s <= 0) return s;
  std::istringstream rest(stat.substr(close + 1));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string w; rest >> w;) f.push_back(w);
  auto field = [&](size_t n) -> std::optional<uint64_t> {  // n: the field's number in proc(5)
    if (n < 3 || n - 3 >= f.size()) return std::nullopt;
    try {
      return std::stoull(f[n - 3]);
    } catch (...) {
      return std::nullopt;
    }
  };
  const auto utime = field(14), stime = field(15), start = field(22);
  const auto vsize = field(23), rss_pages = field(24);
  if (utime && stime) s.cpu_seconds = static_cast<double>(*utime + *stime) / ticks_per_s;
  if (start && boot_time_s)
    s.start_time_s = *boot_time_s + static_cast<double>(*start) / ticks_per_s;
  if (vsize) s.virtual_bytes = *vsize;
  if (rss_pages && page_bytes > 0)
    s.resident_bytes = *rss_pages * static_cast<uint64_t>(page_bytes);
  return s;
}

ProcessSample sample_this_process() {
  ProcessSample s = parse_proc_stat(read_text("/proc/self/stat"), sysconf(_SC_CLK_TCK),
                                    sysconf(_SC_PAGESIZE), boot_time());
  s.open_fds = count_open_fds();
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    s.max_fds = files.rlim_cur;
  return s;
}

void write_process_metrics(MetricsWriter& w, const ProcessSample& s) {
  auto gauge = [&](const char* name, const char* help, auto value, MetricType type) {
    if (!value) return;
    w.family(name, help, type);
    w.sample(name, {}, *value);
  };
  gauge("process_cpu_seconds_total", "CPU time this process has used, user and system, in seconds.",
        s.cpu_seconds, MetricType::kCounter);
  gauge("process_start_time_seconds", "When this process started, in seconds since the Unix epoch.",
        s.start_time_s, MetricType::kGauge);
  gauge("process_resident_memory_bytes", "Memory of this process resident in RAM, in bytes.",
        s.resident_bytes, MetricType::kGauge);
  gauge("process_virtual_memory_bytes", "Size of this process's address space, in bytes.",
        s.virtual_bytes, MetricType::kGauge);
  gauge("process_open_fds", "File descriptors this process holds open.", s.open_fds,
        MetricType::kGauge);
  gauge("process_max_fds", "File descriptors this process may hold open (its soft limit).",
        s.max_fds, MetricType::kGauge);
}

}  // namespace lizard
