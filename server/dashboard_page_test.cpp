#include "server/dashboard_page.h"

#include <gtest/gtest.h>

#include <regex>

namespace lizard {
namespace {

using nlohmann::json;

json snapshot() {
  json executors = json::array({json::object(), json::object()});
  return {{"root", {{"service", "lizard"}, {"version", "1.0"}, {"access", "write"}}},
          {"clients", {{{"id", "w1"}, {"hardware", {{"executors", executors}}}}}},
          {"runtimes",
           {{{"runtime_id", "r1"}, {"status", "done"}},
            {{"runtime_id", "r2"}, {"status", "failed"}, {"error", "</script><b>x"}},
            {{"runtime_id", "r3"}, {"status", "running"}},
            {{"runtime_id", "r4"}, {"status", "queued"}}}}};
}

TEST(DashboardPage, SummaryCountsWorkersExecutorsAndRuns) {
  EXPECT_EQ(dashboard_summary(snapshot()),
            "1 worker (2 executors) · runs: 1 running, 1 queued, 2 finished");
  EXPECT_EQ(dashboard_summary(json::object()),
            "0 workers (0 executors) · runs: 0 running, 0 queued, 0 finished");
}

// The first paint shows the cluster, with a UTC time, and the data the
// script renders at once; no text in the data can end the script element.
TEST(DashboardPage, TheFirstViewAndTheSnapshotAreInThePage) {
  const std::string page = dashboard_page(snapshot());
  EXPECT_EQ(page.find("Loading"), std::string::npos);
  EXPECT_TRUE(std::regex_search(
      page, std::regex("<main id=\"view\"><p class=\"muted\" id=\"first-view\">1 worker \\(2 "
                       "executors\\) · runs: 1 running, 1 queued, 2 finished · as of "
                       "[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} UTC</p></main>")))
      << page;
  const size_t open = page.find("<script id=\"first-snapshot\" type=\"application/json\">");
  ASSERT_NE(open, std::string::npos);
  const size_t body = page.find('>', open) + 1;
  const size_t close = page.find("</script>", body);
  ASSERT_NE(close, std::string::npos);
  const std::string embedded = page.substr(body, close - body);
  EXPECT_EQ(embedded.find('<'), std::string::npos) << embedded;
  EXPECT_EQ(json::parse(embedded), snapshot());
}

TEST(DashboardPage, WithoutReadAccessThePageAsksForTheToken) {
  const std::string page = dashboard_page(nullptr);
  EXPECT_NE(page.find("This server needs a token to show its workers and runs"), std::string::npos);
  EXPECT_NE(page.find("type=\"application/json\">null</script>"), std::string::npos);
  EXPECT_EQ(page.find("<!--first-view-->"), std::string::npos);
}

}  // namespace
}  // namespace lizard
