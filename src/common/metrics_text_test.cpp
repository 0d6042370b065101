#include "common/metrics_text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lizard {
namespace {

std::string error_of(const std::string& text) {
  auto m = parse_metrics_text(text);
  return m.ok() ? "" : m.status().message();
}

TEST(MetricsText, ReadsFamiliesSamplesLabelsAndSpecialValues) {
  auto m = parse_metrics_text(
      "# A comment\n"
      "# HELP up Whether it is up.\n"
      "# TYPE up gauge\n"
      "up 1\n"
      "\n"
      "# TYPE temp gauge\n"
      "temp{room=\"a b\",floor=\"2\",} -Inf 1700000000000\n"
      "temp{room=\"c\"} NaN\n"
      "untyped_thing 3e2\r\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->families.at("up").type, "gauge");
  EXPECT_EQ(m->families.at("up").help, "Whether it is up.");
  EXPECT_EQ(m->families.at("untyped_thing").type, "untyped");
  EXPECT_EQ(m->value("up"), 1.0);
  EXPECT_EQ(m->value("temp", {{"room", "a b"}, {"floor", "2"}}), -INFINITY);
  EXPECT_TRUE(std::isnan(m->value("temp", {{"room", "c"}}).value_or(0)));
  EXPECT_EQ(m->value("untyped_thing"), 300.0);
  EXPECT_EQ(m->count("temp"), 2u);
  EXPECT_FALSE(m->value("temp", {{"room", "z"}}).has_value());
}

TEST(MetricsText, SumsOverMatchingSamples) {
  auto m = parse_metrics_text(
      "# TYPE req_total counter\n"
      "req_total{route=\"/a\",code=\"200\"} 3\n"
      "req_total{route=\"/b\",code=\"200\"} 4\n"
      "req_total{route=\"/b\",code=\"404\"} 1\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->sum("req_total", {{"code", "200"}}), 7.0);
  EXPECT_EQ(m->sum("req_total"), 8.0);
  EXPECT_EQ(m->sum("nothing"), 0.0);
}

TEST(MetricsText, AcceptsAWellFormedHistogram) {
  auto m = parse_metrics_text(
      "# TYPE t_seconds histogram\n"
      "t_seconds_bucket{part=\"k\",le=\"0.1\"} 1\n"
      "t_seconds_bucket{part=\"k\",le=\"1\"} 3\n"
      "t_seconds_bucket{part=\"k\",le=\"+Inf\"} 4\n"
      "t_seconds_sum{part=\"k\"} 9.5\n"
      "t_seconds_count{part=\"k\"} 4\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->value("t_seconds_count", {{"part", "k"}}), 4.0);
}

TEST(MetricsText, RefusesWhatAScraperWouldRefuse) {
  EXPECT_EQ(error_of("9lives 1\n"), "line 1: a sample line must start with a metric name");
  EXPECT_EQ(error_of("x{a=b} 1\n"), "line 1: a label value must be in double quotes");
  EXPECT_EQ(error_of("x{a=\"b} 1\n"), "line 1: a label value is not closed");
  EXPECT_EQ(error_of("x{a=\"\\t\"} 1\n"), "line 1: unknown escape \\t in a label value");
  EXPECT_EQ(error_of("x{a=\"1\",a=\"2\"} 1\n"), "line 1: label a is given twice");
  EXPECT_EQ(error_of("x{a=\"1\" b=\"2\"} 1\n"),
            "line 1: labels must be separated by ',' and closed by '}'");
  EXPECT_EQ(error_of("x one\n"), "line 1: 'one' is not a number");
  EXPECT_EQ(error_of("x\n"), "line 1: a sample has no value");
  EXPECT_EQ(error_of("x 1 2 3\n"), "line 1: unexpected text after the value");
  EXPECT_EQ(error_of("x 1\nx 2\n"), "line 2: sample x is given twice with the same labels");
  EXPECT_EQ(error_of("# TYPE x gauge\n# TYPE x gauge\n"), "line 2: a second TYPE for x");
  EXPECT_EQ(error_of("# TYPE x meter\n"), "line 1: unknown TYPE 'meter' for x");
  EXPECT_EQ(error_of("x 1\n# TYPE x gauge\n"), "line 2: TYPE for x comes after its samples");
  EXPECT_EQ(error_of("x 1\ny 1\nx{a=\"1\"} 2\n"), "line 3: samples of x are not kept together");
  EXPECT_EQ(error_of("# TYPE c_total counter\nc_total -1\n"),
            "line 2: counter c_total is negative or NaN");
}

TEST(MetricsText, RefusesABrokenHistogram) {
  const std::string head = "# TYPE h histogram\n";
  EXPECT_EQ(error_of(head + "h_bucket{le=\"1\"} 3\nh_bucket{le=\"2\"} 2\n"
                            "h_bucket{le=\"+Inf\"} 3\nh_count 3\n"),
            "h buckets are not cumulative");
  EXPECT_EQ(error_of(head + "h_bucket{le=\"1\"} 3\nh_count 3\n"), "h has no le=\"+Inf\" bucket");
  EXPECT_EQ(error_of(head + "h_bucket{le=\"+Inf\"} 3\nh_count 4\n"),
            "h_count differs from its +Inf bucket");
  EXPECT_EQ(error_of(head + "h_bucket 3\n"), "h_bucket has no le label");
}

}  // namespace
}  // namespace lizard
