// parse_metrics_text: reads the Prometheus text exposition format (0.0.4)
// back into samples, checking what a scraper relies on — metric and label
// names, quoted label values and their escapes, numbers, at most one HELP and
// TYPE per family and before its samples, a family's samples kept together,
// no sample given twice, counters not negative, and histogram buckets that
// grow with `le` and end at +Inf equal to _count.  Tests read /metrics with it.
//
//   Result<ParsedMetrics> m = parse_metrics_text(body);
//   if (!m.ok()) fail(m.status().message());      // "line 7: ..."
//   std::optional<double> running = m->value("lizard_runs", {{"status", "running"}});
//   double all = m->sum("lizard_http_requests_total", {{"code", "200"}});
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace lizard {

struct MetricSample {
  std::string name;  // as written: "x_bucket" for a histogram's bucket
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct ParsedMetrics {
  struct Family {
    std::string type = "untyped";  // counter, gauge, histogram, summary, untyped
    std::string help;
  };
  std::map<std::string, Family> families;  // by family name
  std::vector<MetricSample> samples;       // in order

  // The first sample named `name` whose labels include every pair in `labels`.
  std::optional<double> value(const std::string& name,
                              const std::map<std::string, std::string>& labels = {}) const;
  // The sum over every such sample (0 when none).
  double sum(const std::string& name, const std::map<std::string, std::string>& labels = {}) const;
  // How many such samples there are.
  size_t count(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const;
};

Result<ParsedMetrics> parse_metrics_text(std::string_view text);

}  // namespace lizard
