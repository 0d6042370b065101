// Dashboard: the web page the server shows browsers at `/` — workers and
// their executors, the queue, runs with progress and timings, and a page per
// run with plots of its state scalars and iteration times.  The page, its
// script and style sheet are built into the binary (server/dashboard/, no
// outside files or CDN) and read the REST API from the browser by polling.
//
//   if (prefers_html(req.headers["accept"])) respond(index);
//   std::optional<DashboardFile> f = dashboard_file_named("app.js");
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lizard {

struct DashboardFile {
  std::string content_type;
  std::string_view body;
};

// The page ("index.html") or one of the files it loads ("app.js",
// "style.css"); nullopt for any other name.
std::optional<DashboardFile> dashboard_file_named(std::string_view name);

// Whether a request with this Accept header would rather have HTML than
// JSON: a browser's navigation does, curl's "*/*" and an empty header do not.
// Media ranges are weighed by their q values, the most specific range
// deciding for each type.
bool prefers_html(std::string_view accept);

}  // namespace lizard
