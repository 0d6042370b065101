// The dashboard's page as `/` serves it: index.html with its first view
// filled in, so that the first paint shows the cluster rather than a
// placeholder.  The server writes a line that counts the workers and the runs
// into <main>, and embeds the same data the script would fetch (the root,
// /clients and /runtimes) for the script to render at once, before its first
// poll.  Pure functions: any thread.
//
//   nlohmann::json snap = {{"root", root}, {"clients", clients}, {"runtimes", runs}};
//   std::string html = dashboard_page(snap);        // a reader may see them
//   std::string html = dashboard_page(nullptr);     // a read token is needed
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace lizard {

// `snapshot` is null when the request may not read the cluster (the server
// has a read token it did not send); the page then asks for the token.
std::string dashboard_page(const nlohmann::json& snapshot);

// "2 workers (3 executors) · runs: 1 running, 0 queued, 4 finished", from a
// snapshot as above.
std::string dashboard_summary(const nlohmann::json& snapshot);

}  // namespace lizard
