#include "common/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace lizard {

const char* metric_type_name(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

std::string format_metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

namespace {

// Label values escape backslash, double quote and newline; HELP text escapes
// backslash and newline.
void append_escaped(std::string* out, std::string_view s, bool quotes) {
  for (char c : s) {
    if (c == '\\')
      *out += "\\\\";
    else if (c == '\n')
      *out += "\\n";
    else if (c == '"' && quotes)
      *out += "\\\"";
    else
      *out += c;
  }
}

}  // namespace

void MetricsWriter::family(std::string_view name, std::string_view help, MetricType type) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  append_escaped(&out_, help, false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += metric_type_name(type);
  out_ += '\n';
}

void MetricsWriter::sample_head(std::string_view name, const MetricLabels& labels) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      append_escaped(&out_, labels[i].second, true);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
}

void MetricsWriter::sample(std::string_view name, const MetricLabels& labels, double value) {
  sample_head(name, labels);
  out_ += format_metric_value(value);
  out_ += '\n';
}

void MetricsWriter::sample(std::string_view name, const MetricLabels& labels, uint64_t value) {
  sample_head(name, labels);
  out_ += std::to_string(value);
  out_ += '\n';
}

void Gauge::add(double d) {
  double cur = value_.load(std::memory_order_relaxed);
  while (!value_.compare_exchange_weak(cur, cur + d, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double v) {
  const size_t i = std::isnan(v)
                       ? bounds_.size()
                       : static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                             bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  double cur = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

// The count is the sum of the buckets, so +Inf always equals it even while
// observations land during the snapshot.
Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.bounds = bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

MetricLabels MetricFamilyBase::labels_of(const std::vector<std::string>& values) const {
  MetricLabels labels;
  for (size_t i = 0; i < label_names_.size() && i < values.size(); ++i)
    labels.emplace_back(label_names_[i], values[i]);
  return labels;
}

template <>
void MetricFamily<Counter>::write(MetricsWriter& w) const {
  w.family(name_, help_, MetricType::kCounter);
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [values, c] : members_) w.sample(name_, labels_of(values), c->value());
}

template <>
void MetricFamily<Gauge>::write(MetricsWriter& w) const {
  w.family(name_, help_, MetricType::kGauge);
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [values, g] : members_) w.sample(name_, labels_of(values), g->value());
}

template <>
void MetricFamily<Histogram>::write(MetricsWriter& w) const {
  w.family(name_, help_, MetricType::kHistogram);
  std::lock_guard<std::mutex> l(mu_);
  const std::string bucket = name_ + "_bucket";
  for (const auto& [values, h] : members_) {
    const Histogram::Snapshot s = h->snapshot();
    MetricLabels labels = labels_of(values);
    labels.emplace_back("le", "");
    for (size_t i = 0; i < s.cumulative.size(); ++i) {
      labels.back().second = i < s.bounds.size() ? format_metric_value(s.bounds[i]) : "+Inf";
      w.sample(bucket, labels, s.cumulative[i]);
    }
    labels.pop_back();
    w.sample(name_ + "_sum", labels, s.sum);
    w.sample(name_ + "_count", labels, s.count());
  }
}

template <typename F>
F& MetricsRegistry::add(std::unique_ptr<F> family) {
  F& f = *family;
  std::lock_guard<std::mutex> l(mu_);
  families_.push_back(std::move(family));
  return f;
}

CounterFamily& MetricsRegistry::counter(std::string name, std::string help,
                                        std::vector<std::string> label_names) {
  return add(std::make_unique<CounterFamily>(std::move(name), std::move(help),
                                             std::move(label_names),
                                             [] { return std::make_unique<Counter>(); }));
}

GaugeFamily& MetricsRegistry::gauge(std::string name, std::string help,
                                    std::vector<std::string> label_names) {
  return add(std::make_unique<GaugeFamily>(std::move(name), std::move(help), std::move(label_names),
                                           [] { return std::make_unique<Gauge>(); }));
}

HistogramFamily& MetricsRegistry::histogram(std::string name, std::string help,
                                            std::vector<std::string> label_names,
                                            std::vector<double> bounds) {
  std::sort(bounds.begin(), bounds.end());
  return add(
      std::make_unique<HistogramFamily>(std::move(name), std::move(help), std::move(label_names),
                                        [bounds] { return std::make_unique<Histogram>(bounds); }));
}

void MetricsRegistry::add_collector(std::function<void(MetricsWriter&)> collect) {
  std::lock_guard<std::mutex> l(mu_);
  collectors_.push_back(std::move(collect));
}

std::string MetricsRegistry::render() const {
  MetricsWriter w;
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& f : families_) f->write(w);
  for (const auto& c : collectors_) c(w);
  return w.text();
}

}  // namespace lizard
