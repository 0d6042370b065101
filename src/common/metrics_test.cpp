#include "common/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "common/metrics_text.h"

namespace lizard {
namespace {

ParsedMetrics parsed(const MetricsRegistry& reg) {
  auto m = parse_metrics_text(reg.render());
  EXPECT_TRUE(m.ok()) << m.status().message() << "\n" << reg.render();
  return m.ok() ? m.value() : ParsedMetrics{};
}

TEST(Metrics, CountersRenderWithHelpTypeAndLabels) {
  MetricsRegistry reg;
  auto& requests = reg.counter("app_requests_total", "Requests answered.", {"route", "code"});
  requests.with({"/a", "200"}).add();
  requests.with({"/a", "200"}).add(2);
  requests.with({"/b/{id}", "404"}).add();
  EXPECT_EQ(reg.render(),
            "# HELP app_requests_total Requests answered.\n"
            "# TYPE app_requests_total counter\n"
            "app_requests_total{route=\"/a\",code=\"200\"} 3\n"
            "app_requests_total{route=\"/b/{id}\",code=\"404\"} 1\n");
}

TEST(Metrics, AFamilyWithoutLabelsHasOneSample) {
  MetricsRegistry reg;
  Gauge& g = reg.gauge("app_temperature", "A gauge.").with({});
  g.set(2.5);
  g.add(-4);
  EXPECT_EQ(
      reg.render(),
      "# HELP app_temperature A gauge.\n# TYPE app_temperature gauge\napp_temperature -1.5\n");
}

TEST(Metrics, LabelValuesAndHelpAreEscaped) {
  MetricsRegistry reg;
  reg.counter("app_x_total", "Line one\nback\\slash \"quoted\"", {"v"}).with({"a\"b\\c\nd"}).add();
  const std::string text = reg.render();
  EXPECT_NE(text.find("# HELP app_x_total Line one\\nback\\\\slash \"quoted\"\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("app_x_total{v=\"a\\\"b\\\\c\\nd\"} 1\n"), std::string::npos) << text;
  ParsedMetrics m = parsed(reg);
  EXPECT_EQ(m.value("app_x_total", {{"v", "a\"b\\c\nd"}}), 1.0);
  EXPECT_EQ(m.families["app_x_total"].help, "Line one\nback\\slash \"quoted\"");
}

TEST(Metrics, HistogramBucketsAreCumulativeWithSumAndCount) {
  MetricsRegistry reg;
  Histogram& h =
      reg.histogram("app_step_seconds", "Step time.", {"part"}, {0.1, 0.01, 1}).with({"kernel"});
  for (double v : {0.005, 0.01, 0.05, 0.5, 7.0}) h.observe(v);
  ParsedMetrics m = parsed(reg);
  EXPECT_EQ(m.families["app_step_seconds"].type, "histogram");
  // le is inclusive: 0.01 counts in the 0.01 bucket.
  EXPECT_EQ(m.value("app_step_seconds_bucket", {{"part", "kernel"}, {"le", "0.01"}}), 2.0);
  EXPECT_EQ(m.value("app_step_seconds_bucket", {{"part", "kernel"}, {"le", "0.1"}}), 3.0);
  EXPECT_EQ(m.value("app_step_seconds_bucket", {{"part", "kernel"}, {"le", "1"}}), 4.0);
  EXPECT_EQ(m.value("app_step_seconds_bucket", {{"part", "kernel"}, {"le", "+Inf"}}), 5.0);
  EXPECT_EQ(m.value("app_step_seconds_count", {{"part", "kernel"}}), 5.0);
  EXPECT_NEAR(m.value("app_step_seconds_sum", {{"part", "kernel"}}).value_or(0), 7.565, 1e-12);
}

TEST(Metrics, CollectorsWriteTheirValuesAtEachRender) {
  MetricsRegistry reg;
  int workers = 1;
  reg.add_collector([&](MetricsWriter& w) {
    w.family("app_workers", "Workers connected.", MetricType::kGauge);
    w.sample("app_workers", {}, static_cast<double>(workers));
  });
  EXPECT_EQ(parsed(reg).value("app_workers"), 1.0);
  workers = 3;
  EXPECT_EQ(parsed(reg).value("app_workers"), 3.0);
}

TEST(Metrics, NumbersRoundTrip) {
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(1e-4), "0.0001");
  EXPECT_EQ(format_metric_value(25276502016.0), "25276502016");
  EXPECT_EQ(format_metric_value(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(format_metric_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_metric_value(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(format_metric_value(std::nan("")), "NaN");
}

// Instruments are updated from many threads at once without losing counts.
TEST(Metrics, ConcurrentUpdatesAreAllCounted) {
  MetricsRegistry reg;
  Counter& c = reg.counter("app_n_total", "n").with({});
  Histogram& h = reg.histogram("app_t_seconds", "t", {}, {0.5}).with({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.add();
        h.observe(i % 2 ? 1.0 : 0.25);
      }
    });
  for (auto& t : threads) t.join();
  ParsedMetrics m = parsed(reg);
  EXPECT_EQ(m.value("app_n_total"), 40000.0);
  EXPECT_EQ(m.value("app_t_seconds_bucket", {{"le", "0.5"}}), 20000.0);
  EXPECT_EQ(m.value("app_t_seconds_count"), 40000.0);
  EXPECT_EQ(m.value("app_t_seconds_sum"), 25000.0);
}

TEST(Metrics, WithReturnsTheSameInstrumentForTheSameLabels) {
  MetricsRegistry reg;
  auto& f = reg.counter("app_y_total", "y", {"a"});
  EXPECT_EQ(&f.with({"1"}), &f.with({"1"}));
  EXPECT_NE(&f.with({"1"}), &f.with({"2"}));
}

}  // namespace
}  // namespace lizard
