// docs/openapi.yaml against the server's route table: every route is
// described, with its path parameters, a success answer and its errors, and
// the file describes no route the server does not answer.  The paths routes
// had before /api/v1 are path items that refer to the versioned ones, but
// for /runtimes/{id}, whose one template serves two old routes (a run's GET
// and DELETE, a program's POST).  scripts/lint-api runs Redocly's linter on
// the file; the checks below that it would make too fail here first.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>

#include "server/http_routes.h"

namespace lizard {
namespace {

const char* const kMethods[] = {"get",     "put",  "post",  "delete",
                                "options", "head", "patch", "trace"};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The {names} of a templated path.
std::set<std::string> template_names(const std::string& path) {
  std::set<std::string> out;
  for (size_t open = path.find('{'); open != std::string::npos; open = path.find('{', open + 1))
    out.insert(path.substr(open + 1, path.find('}', open) - open - 1));
  return out;
}

// A JSON pointer's token: "~1" stands for "/" and "~0" for "~".
std::string unescape(std::string token) {
  for (size_t at = 0; (at = token.find('~', at)) != std::string::npos; ++at)
    token.replace(at, 2, token.compare(at, 2, "~1") == 0 ? "/" : "~");
  return token;
}

// The node's "$ref", read without creating it.
const YAML::Node ref_of(const YAML::Node& n) {
  return n && n.IsMap() ? n["$ref"] : YAML::Node();
}

class OpenApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_THROW(spec_.reset(YAML::LoadFile(LIZARD_SOURCE_DIR "/docs/openapi.yaml")));
    ASSERT_TRUE(paths() && paths().IsMap());
  }
  const YAML::Node paths() const { return spec_["paths"]; }

  // Follows a local "$ref" ("#/components/parameters/RunId").  Nodes are
  // only read through const references and re-seated with reset(): a
  // yaml-cpp Node assigned to writes through to the node it refers to.
  YAML::Node resolve(const YAML::Node& start) const {
    YAML::Node n;
    n.reset(start);
    for (int depth = 0; depth < 8 && ref_of(n); ++depth) {
      const std::string ref = ref_of(n).as<std::string>();
      EXPECT_EQ(ref.rfind("#/", 0), 0u) << ref;
      YAML::Node at;
      at.reset(spec_);
      for (size_t i = 2; i <= ref.size();) {
        size_t j = ref.find('/', i);
        if (j == std::string::npos) j = ref.size();
        const YAML::Node& here = at;
        YAML::Node next(here[unescape(ref.substr(i, j - i))]);
        if (!next) return next;
        at.reset(next);
        i = j + 1;
      }
      n.reset(at);
    }
    return n;
  }

  // The names of the path parameters an operation declares (on the
  // operation or on its path item).
  std::set<std::string> path_params(const YAML::Node& item, const YAML::Node& op) const {
    std::set<std::string> out;
    for (const YAML::Node& list : {item["parameters"], op["parameters"]}) {
      if (!list) continue;
      for (const auto& p : list) {
        const YAML::Node r = resolve(p);
        if (!r || !r["in"] || !r["name"]) {
          ADD_FAILURE() << "a parameter that does not resolve to one with `in` and `name`";
          continue;
        }
        if (r["in"] && r["in"].as<std::string>() == "path") {
          EXPECT_TRUE(r["required"] && r["required"].as<bool>())
              << "path parameter " << r["name"] << " must be required";
          out.insert(r["name"].as<std::string>());
        }
      }
    }
    return out;
  }

  YAML::Node spec_;
};

TEST_F(OpenApi, EveryRouteOfTheServerIsDescribed) {
  std::set<std::string> operation_ids;
  for (const RouteSpec& route : route_specs()) {
    const std::string where = route.method + " " + route.path;
    // A path the route had before /api/v1 refers to the versioned route's item.
    const YAML::Node listed = paths()[route.path];
    const bool alias = static_cast<bool>(ref_of(listed));
    const YAML::Node item = resolve(listed);
    const YAML::Node op = item && item.IsMap() ? item[lower(route.method)] : YAML::Node();
    if (!op || !op.IsMap()) {
      ADD_FAILURE() << where << " is missing from docs/openapi.yaml";
      continue;
    }
    EXPECT_TRUE(op["summary"]) << where << " has no summary";
    const std::string id = op["operationId"] ? op["operationId"].as<std::string>() : "";
    EXPECT_FALSE(id.empty()) << where << " has no operationId";
    EXPECT_TRUE(id.empty() || alias || operation_ids.insert(id).second)
        << where << ": operationId " << id << " is used twice";
    EXPECT_EQ(path_params(item, op), template_names(route.path))
        << where << ": the path parameters differ from the route's {names}";

    const YAML::Node responses = op["responses"];
    if (!responses || !responses.IsMap()) {
      ADD_FAILURE() << where << " has no responses";
      continue;
    }
    bool success = false, error = false;
    for (const auto& r : responses) {
      const std::string code = r.first.as<std::string>();
      success = success || code[0] == '2';
      error = error || code[0] == '4' || code[0] == '5';
      EXPECT_TRUE(resolve(r.second)["description"]) << where << " " << code << ": no description";
    }
    EXPECT_TRUE(success) << where << " describes no success answer";
    const bool open = op["security"] && op["security"].IsSequence() && op["security"].size() == 0;
    EXPECT_TRUE(error || route.path == "/ruok") << where << " describes no error answer";
    EXPECT_TRUE(open || responses["401"]) << where << " needs a token but lists no 401";
    EXPECT_TRUE(template_names(route.path).empty() || responses["404"])
        << where << " has path parameters but lists no 404";
  }
}

TEST_F(OpenApi, EveryDescribedRouteIsAnsweredByTheServer) {
  for (const auto& path : paths()) {
    const std::string p = path.first.as<std::string>();
    const YAML::Node item = resolve(path.second);
    EXPECT_TRUE(item && item.IsMap()) << p << " refers to nothing";
    if (!item || !item.IsMap()) continue;
    for (const auto& entry : item) {
      const std::string key = entry.first.as<std::string>();
      if (std::find(std::begin(kMethods), std::end(kMethods), key) == std::end(kMethods)) continue;
      const bool served =
          std::any_of(route_specs().begin(), route_specs().end(),
                      [&](const RouteSpec& r) { return r.path == p && lower(r.method) == key; });
      EXPECT_TRUE(served) << "docs/openapi.yaml describes " << key << " " << p
                          << ", which the server does not answer";
    }
  }
}

// No two paths differ only in their parameters' names (`/runtimes/{hash}`
// beside `/runtimes/{id}`): OpenAPI takes them for the same path.
TEST_F(OpenApi, NoTwoPathsDifferOnlyInParameterNames) {
  std::set<std::string> shapes;
  for (const auto& path : paths()) {
    std::string shape = path.first.as<std::string>();
    for (size_t open = shape.find('{'); open != std::string::npos; open = shape.find('{', open + 1))
      shape.erase(open + 1, shape.find('}', open) - open - 1);
    EXPECT_TRUE(shapes.insert(shape).second) << path.first << " repeats another path's template";
  }
}

// OpenAPI 3.0's exclusiveMinimum and exclusiveMaximum are booleans beside
// minimum and maximum (a number there is 3.1's form).
TEST_F(OpenApi, ExclusiveBoundsAreThoseOfOpenApi30) {
  int bounds = 0;
  std::function<void(const YAML::Node&)> walk = [&](const YAML::Node& n) {
    if (n.IsMap()) {
      for (const char* key : {"exclusiveMinimum", "exclusiveMaximum"}) {
        if (!n[key]) continue;
        ++bounds;
        const std::string value = n[key].as<std::string>();
        EXPECT_TRUE(value == "true" || value == "false") << key << ": " << value;
        EXPECT_TRUE(n[std::string(key) == "exclusiveMinimum" ? "minimum" : "maximum"])
            << key << " without the bound it qualifies";
      }
      for (const auto& kv : n) walk(kv.second);
    } else if (n.IsSequence()) {
      for (const auto& e : n) walk(e);
    }
  };
  walk(spec_);
  EXPECT_GT(bounds, 0);
}

// Every "$ref" in the file points at something that is there.
TEST_F(OpenApi, ReferencesResolve) {
  int refs = 0;
  std::function<void(const YAML::Node&)> walk = [&](const YAML::Node& n) {
    if (n.IsMap()) {
      if (ref_of(n)) {
        ++refs;
        EXPECT_TRUE(resolve(n)) << "dangling $ref " << ref_of(n).as<std::string>();
      }
      for (const auto& kv : n) walk(kv.second);
    } else if (n.IsSequence()) {
      for (const auto& e : n) walk(e);
    }
  };
  walk(spec_);
  EXPECT_GT(refs, 10);
}

}  // namespace
}  // namespace lizard
