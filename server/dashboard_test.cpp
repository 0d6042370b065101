#include "server/dashboard.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/http_routes.h"
#include "server/testing/fakes.h"
#include "server/worker_registry.h"

namespace lizard {
namespace {

// What Chromium and Firefox send when a user opens a page.
constexpr const char* kBrowserAccept =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

TEST(Dashboard, BrowsersPreferHtmlAndApiClientsDoNot) {
  EXPECT_TRUE(prefers_html(kBrowserAccept));
  EXPECT_TRUE(prefers_html("text/html"));
  EXPECT_TRUE(prefers_html("TEXT/HTML; charset=utf-8"));
  EXPECT_TRUE(prefers_html("application/json;q=0.5, text/*"));
  EXPECT_FALSE(prefers_html(""));
  EXPECT_FALSE(prefers_html("*/*"));  // curl, fetch()
  EXPECT_FALSE(prefers_html("application/json"));
  EXPECT_FALSE(prefers_html("application/json, text/html;q=0.9"));
  EXPECT_FALSE(prefers_html("text/html;q=0, */*"));
  EXPECT_FALSE(prefers_html("text/html;q=0.5, application/json;q=0.5"));
}

TEST(Dashboard, ThePageAndTheFilesItLoadsAreBuiltIn) {
  auto page = dashboard_file_named("index.html");
  ASSERT_TRUE(page.has_value());
  EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("ui/app.js"), std::string_view::npos);
  EXPECT_NE(page->body.find("ui/style.css"), std::string_view::npos);
  auto script = dashboard_file_named("app.js");
  ASSERT_TRUE(script.has_value());
  EXPECT_EQ(script->content_type, "text/javascript; charset=utf-8");
  EXPECT_NE(script->body.find("runtimes/"), std::string_view::npos);
  // The text functions app.js takes from format.js, which the page loads first.
  auto format = dashboard_file_named("format.js");
  ASSERT_TRUE(format.has_value());
  EXPECT_EQ(format->content_type, "text/javascript; charset=utf-8");
  EXPECT_NE(format->body.find("window.lizardFormat"), std::string_view::npos);
  EXPECT_LT(page->body.find("ui/format.js"), page->body.find("ui/app.js"));
  auto style = dashboard_file_named("style.css");
  ASSERT_TRUE(style.has_value());
  EXPECT_FALSE(style->body.empty());
  EXPECT_FALSE(dashboard_file_named("../CMakeLists.txt").has_value());
  EXPECT_FALSE(dashboard_file_named("").has_value());
}

HttpResponse get(HttpRoutes& routes, const std::string& target, const std::string& accept,
                 const std::string& token = "") {
  HttpRequest req;
  req.method = "GET";
  req.target = target;
  if (!accept.empty()) req.headers["accept"] = accept;
  if (!token.empty()) req.headers["authorization"] = "Bearer " + token;
  HttpResponse got{0, "", ""};
  routes.handle(std::move(req), [&](HttpResponse r) { got = std::move(r); });
  return got;
}

TEST(Dashboard, RootAnswersBrowsersWithThePageAndOthersWithJson) {
  WorkerRegistry workers;
  HttpRoutes routes({}, {nullptr, &workers, nullptr, nullptr, nullptr, nullptr, nullptr});
  HttpResponse page = get(routes, "/", kBrowserAccept);
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page.body.find("Loading"), std::string::npos);
  EXPECT_NE(page.body.find("0 workers (0 executors) · runs: 0 running, 0 queued, 0 finished"),
            std::string::npos)
      << page.body;
  EXPECT_NE(page.body.find("ui/app.js"), std::string::npos);
  HttpResponse api = get(routes, "/", "*/*");
  EXPECT_EQ(api.status, 200);
  EXPECT_EQ(api.content_type, "application/json");
  auto j = nlohmann::json::parse(api.body);
  EXPECT_EQ(j["service"], "lizard");
  EXPECT_EQ(j["access"], "write");
  HttpResponse js = get(routes, "/ui/app.js", "");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.body, dashboard_file_named("app.js")->body);
  HttpResponse missing = get(routes, "/ui/nope.js", "");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(nlohmann::json::parse(missing.body)["error"], "no such dashboard file: nope.js");
}

// The page and its files hold no data, so a browser gets them without a
// token; everything they read still needs one.
TEST(Dashboard, ThePageLoadsWithoutATokenAndTheDataDoesNot) {
  WorkerRegistry workers;
  HttpRoutes routes({"write", "read"},
                    {nullptr, &workers, nullptr, nullptr, nullptr, nullptr, nullptr});
  const std::string id = workers.connect(std::make_shared<testing::FakeWorkerLink>());
  HelloMsg hello;
  hello.hostname = "secret-host";
  ASSERT_TRUE(workers.hello(id, hello, {}));
  HttpResponse page = get(routes, "/", kBrowserAccept);
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.body.find("secret-host"), std::string::npos) << "data without the token";
  EXPECT_NE(page.body.find("needs a token"), std::string::npos) << page.body;
  // With the read token (a proxy may add it), the page carries its first view.
  HttpResponse read = get(routes, "/", kBrowserAccept, "read");
  EXPECT_NE(read.body.find("secret-host"), std::string::npos) << read.body;
  EXPECT_NE(read.body.find("1 worker (0 executors)"), std::string::npos) << read.body;
  EXPECT_EQ(get(routes, "/ui/app.js", "").status, 200);
  EXPECT_EQ(get(routes, "/ui/style.css", "").status, 200);
  EXPECT_EQ(get(routes, "/", "*/*").status, 401);
  EXPECT_EQ(get(routes, "/clients", kBrowserAccept).status, 401);
  EXPECT_EQ(get(routes, "/clients", "", "read").status, 200);
}

TEST(Dashboard, RootSaysWhatTheTokenSentAllows) {
  WorkerRegistry workers;
  HttpRoutes routes({"write", "read"},
                    {nullptr, &workers, nullptr, nullptr, nullptr, nullptr, nullptr});
  auto access = [&](const std::string& token) {
    return nlohmann::json::parse(get(routes, "/", "application/json", token).body)["access"];
  };
  EXPECT_EQ(access("read"), "read");
  EXPECT_EQ(access("write"), "write");
}

}  // namespace
}  // namespace lizard
