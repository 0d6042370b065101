// Metrics: counters, gauges and histograms, in families split by labels, and
// their rendering in the Prometheus text exposition format (version 0.0.4).
//
// Updating an instrument is a few relaxed atomic operations with no lock and
// no allocation, so instruments may sit on hot paths: look one up once with
// with() and keep the reference (references stay valid for the registry's
// life).  Values that live elsewhere (connected workers, runs by status) are
// written at scrape time by collectors, so nothing has to mirror them.
//
//   MetricsRegistry reg;
//   Counter& sent = reg.counter("app_sent_bytes_total", "Bytes sent.").with({});
//   sent.add(512);
//   Histogram& kernel = reg.histogram("app_step_seconds", "Step time.", {"part"},
//                                     {0.001, 0.01, 0.1}).with({"kernel"});
//   kernel.observe(0.004);
//   reg.add_collector([](MetricsWriter& w) {
//     w.family("app_workers", "Workers connected.", MetricType::kGauge);
//     w.sample("app_workers", {}, 3);
//   });
//   std::string text = reg.render();   // served with kMetricsContentType
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lizard {

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kCounter, kGauge, kHistogram };
const char* metric_type_name(MetricType t);

// Label names and values of one sample, in the order they are written.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Writes the exposition text: a family's HELP and TYPE lines, then its samples.
class MetricsWriter {
 public:
  void family(std::string_view name, std::string_view help, MetricType type);
  void sample(std::string_view name, const MetricLabels& labels, double value);
  void sample(std::string_view name, const MetricLabels& labels, uint64_t value);
  const std::string& text() const { return out_; }

 private:
  void sample_head(std::string_view name, const MetricLabels& labels);
  std::string out_;
};

// A number as the exposition writes it: shortest round-trip decimal, or
// +Inf, -Inf, NaN.
std::string format_metric_value(double v);

// Only goes up.
class Counter {
 public:
  void add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Goes up and down.
class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double d);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Counts observations into buckets with fixed upper bounds (ascending); a
// value lands in the first bucket whose bound it does not exceed, or in +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count() const { return cumulative.empty() ? 0 : cumulative.back(); }
  };
  Snapshot snapshot() const;

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<double> sum_{0};
};

// One metric name and its instruments, one per combination of label values.
class MetricFamilyBase {
 public:
  MetricFamilyBase(std::string name, std::string help, std::vector<std::string> label_names)
      : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}
  virtual ~MetricFamilyBase() = default;
  virtual void write(MetricsWriter& w) const = 0;
  const std::string& name() const { return name_; }

 protected:
  MetricLabels labels_of(const std::vector<std::string>& values) const;
  std::string name_, help_;
  std::vector<std::string> label_names_;
};

template <typename M>
class MetricFamily : public MetricFamilyBase {
 public:
  using Make = std::function<std::unique_ptr<M>()>;
  MetricFamily(std::string name, std::string help, std::vector<std::string> label_names, Make make)
      : MetricFamilyBase(std::move(name), std::move(help), std::move(label_names)),
        make_(std::move(make)) {}

  // The instrument for these label values (one per label name, in order),
  // created at zero the first time.  Takes a lock: keep the reference.
  M& with(const std::vector<std::string>& values) {
    std::lock_guard<std::mutex> l(mu_);
    auto& slot = members_[values];
    if (!slot) slot = make_();
    return *slot;
  }
  void write(MetricsWriter& w) const override;

 private:
  Make make_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> members_;  // GUARDED_BY(mu_)
};

template <>
void MetricFamily<Counter>::write(MetricsWriter& w) const;
template <>
void MetricFamily<Gauge>::write(MetricsWriter& w) const;
template <>
void MetricFamily<Histogram>::write(MetricsWriter& w) const;

using CounterFamily = MetricFamily<Counter>;
using GaugeFamily = MetricFamily<Gauge>;
using HistogramFamily = MetricFamily<Histogram>;

class MetricsRegistry {
 public:
  CounterFamily& counter(std::string name, std::string help,
                         std::vector<std::string> label_names = {});
  GaugeFamily& gauge(std::string name, std::string help, std::vector<std::string> label_names = {});
  HistogramFamily& histogram(std::string name, std::string help,
                             std::vector<std::string> label_names, std::vector<double> bounds);
  // Called at each render(), after the families, to write values read then.
  void add_collector(std::function<void(MetricsWriter&)> collect);

  std::string render() const;

 private:
  template <typename F>
  F& add(std::unique_ptr<F> family);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<MetricFamilyBase>> families_;      // GUARDED_BY(mu_)
  std::vector<std::function<void(MetricsWriter&)>> collectors_;  // GUARDED_BY(mu_)
};

}  // namespace lizard
