#include "server/dashboard_page.h"

#include <string_view>

#include "common/clock.h"
#include "server/dashboard.h"

namespace lizard {
namespace {

using nlohmann::json;

constexpr std::string_view kViewMark = "<!--first-view-->";
constexpr std::string_view kSnapshotMark = "type=\"application/json\">null<";

std::string plural(size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// JSON inside a <script> element: no "<" may start a closing tag or comment.
std::string script_safe(const json& j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '<')
      out += "\\u003c";
    else
      out += ch;
  }
  return out;
}

void replace_once(std::string* page, std::string_view mark, const std::string& with) {
  const size_t at = page->find(mark);
  if (at != std::string::npos) page->replace(at, mark.size(), with);
}

}  // namespace

std::string dashboard_summary(const json& snapshot) {
  const json clients = snapshot.value("clients", json::array());
  const json runs = snapshot.value("runtimes", json::array());
  size_t executors = 0, running = 0, queued = 0;
  for (const auto& w : clients)
    if (w.contains("hardware") && w["hardware"].contains("executors"))
      executors += w["hardware"]["executors"].size();
  for (const auto& r : runs) {
    const std::string status = r.value("status", "");
    running += status == "running";
    queued += status == "queued";
  }
  return plural(clients.size(), "worker", "workers") + " (" +
         plural(executors, "executor", "executors") + ") · runs: " + std::to_string(running) +
         " running, " + std::to_string(queued) + " queued, " +
         std::to_string(runs.size() - running - queued) + " finished";
}

std::string dashboard_page(const json& snapshot) {
  std::string page(dashboard_file_named("index.html")->body);
  std::string view;
  if (snapshot.is_null()) {
    view =
        "<p class=\"muted\" id=\"first-view\">This server needs a token to show its workers "
        "and runs: enter it above.</p>";
  } else {
    std::string now = now_iso();
    if (!now.empty() && now.back() == 'Z') now.pop_back();
    for (char& ch : now)
      if (ch == 'T') ch = ' ';
    view = "<p class=\"muted\" id=\"first-view\">" + dashboard_summary(snapshot) + " · as of " +
           now + " UTC</p>";
    replace_once(&page, kSnapshotMark, "type=\"application/json\">" + script_safe(snapshot) + "<");
  }
  replace_once(&page, kViewMark, view);
  return page;
}

}  // namespace lizard
