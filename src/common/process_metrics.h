// Process metrics: the standard `process_*` families of the Prometheus
// exposition (CPU time, resident and virtual memory, open and allowed file
// descriptors, start time) for the calling process, read from /proc at
// each scrape, so that dashboards made for any Prometheus target work for
// a lizard daemon too.
//
//   MetricsWriter w;
//   write_process_metrics(w);            // beside the daemon's own families
//   std::string text = w.text();
//
// A value /proc does not give (another kernel, a sandbox) is left out
// rather than written as 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/metrics.h"

namespace lizard {

// What the families are written from: one reading of the process.
struct ProcessSample {
  std::optional<double> cpu_seconds;       // user + system
  std::optional<double> start_time_s;      // since the Unix epoch
  std::optional<uint64_t> resident_bytes;  // resident set
  std::optional<uint64_t> virtual_bytes;   // address space
  std::optional<uint64_t> open_fds;
  std::optional<uint64_t> max_fds;  // RLIMIT_NOFILE's soft limit
};

// Parses /proc/<pid>/stat's text, given the clock ticks per second, the page
// size and the system's boot time (Unix seconds); fields it cannot read
// stay unset.
ProcessSample parse_proc_stat(const std::string& stat, long ticks_per_s, long page_bytes,
                              std::optional<double> boot_time_s);

// The calling process, now.
ProcessSample sample_this_process();

void write_process_metrics(MetricsWriter& w, const ProcessSample& s);
inline void write_process_metrics(MetricsWriter& w) {
  write_process_metrics(w, sample_this_process());
}

}  // namespace lizard
