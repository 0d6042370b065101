// packaging/kubernetes/*.yaml against the server's and the worker's defaults:
// the image is lizard:<version>, the server's container listens on the
// server's default port with a token (so on every address), the Service and
// the probes use that port, the probes ask /ruok (a route of the server's
// table), and the workers dial the Service on its port.  The manifests are
// parsed, not applied.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "client/worker_daemon.h"
#include "server/http_routes.h"
#include "server/hub_server.h"

namespace lizard {
namespace {

// The documents of a manifest file by kind.
std::map<std::string, YAML::Node> documents(const std::string& file) {
  std::map<std::string, YAML::Node> out;
  for (const YAML::Node& doc :
       YAML::LoadAllFromFile(LIZARD_SOURCE_DIR "/packaging/kubernetes/" + file))
    out[doc["kind"].as<std::string>()] = doc;
  return out;
}

YAML::Node only_container(const YAML::Node& workload) {
  YAML::Node containers = workload["spec"]["template"]["spec"]["containers"];
  EXPECT_EQ(containers.size(), 1u);
  return containers[0];
}

std::vector<std::string> args_of(const YAML::Node& container) {
  return container["args"].as<std::vector<std::string>>();
}

bool has_token_env(const YAML::Node& container) {
  for (const YAML::Node& e : container["env"])
    if (e["name"].as<std::string>() == "LIZARD_TOKEN" && e["valueFrom"]["secretKeyRef"])
      return true;
  return false;
}

const std::string kImage = std::string("lizard:") + LIZARD_VERSION;

TEST(KubernetesManifests, ServerDeploymentServiceAndProbesUseTheServersDefaults) {
  auto docs = documents("lizard-server.yaml");
  ASSERT_TRUE(docs.count("Deployment") && docs.count("Service") &&
              docs.count("PersistentVolumeClaim"));
  const int port = HubServerOptions().port;
  YAML::Node server = only_container(docs["Deployment"]);
  EXPECT_EQ(server["image"].as<std::string>(), kImage);
  // No --port or --host: the default port, and with a token every address.
  EXPECT_EQ(args_of(server), std::vector<std::string>{"server"});
  EXPECT_TRUE(has_token_env(server)) << "without a token the server listens on 127.0.0.1 only";
  EXPECT_EQ(server["ports"][0]["containerPort"].as<int>(), port);

  bool ruok_is_a_route = false;
  for (const RouteSpec& r : route_specs())
    ruok_is_a_route |= r.method == "GET" && r.path == "/ruok";
  ASSERT_TRUE(ruok_is_a_route);
  for (const char* probe : {"readinessProbe", "livenessProbe"}) {
    EXPECT_EQ(server[probe]["httpGet"]["path"].as<std::string>(), "/ruok") << probe;
    EXPECT_EQ(server[probe]["httpGet"]["port"].as<int>(), port) << probe;
  }
  EXPECT_EQ(server["volumeMounts"][0]["mountPath"].as<std::string>(), "/var/lib/lizard");
  EXPECT_EQ(docs["Deployment"]["spec"]["replicas"].as<int>(), 1);
  EXPECT_EQ(docs["Deployment"]["spec"]["strategy"]["type"].as<std::string>(), "Recreate");

  YAML::Node service = docs["Service"];
  EXPECT_EQ(service["spec"]["ports"][0]["port"].as<int>(), port);
  EXPECT_EQ(service["spec"]["ports"][0]["targetPort"].as<int>(), port);
  for (const auto& label : service["spec"]["selector"])
    EXPECT_EQ(
        docs["Deployment"]["spec"]["template"]["metadata"]["labels"][label.first.as<std::string>()]
            .as<std::string>(),
        label.second.as<std::string>());
}

TEST(KubernetesManifests, WorkerDaemonSetDialsTheServiceWithTheToken) {
  auto docs = documents("lizard-workers.yaml");
  ASSERT_TRUE(docs.count("DaemonSet"));
  auto service = documents("lizard-server.yaml")["Service"];
  YAML::Node worker = only_container(docs["DaemonSet"]);
  EXPECT_EQ(worker["image"].as<std::string>(), kImage);
  std::vector<std::string> args = args_of(worker);
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args[0], "client");
  auto after = [&](const std::string& flag) {
    auto it = std::find(args.begin(), args.end(), flag);
    return it != args.end() && it + 1 != args.end() ? *(it + 1) : std::string();
  };
  EXPECT_EQ(after("-a"), service["metadata"]["name"].as<std::string>());
  const std::string port = after("-p").empty() ? std::to_string(WorkerOptions().port) : after("-p");
  EXPECT_EQ(port, service["spec"]["ports"][0]["port"].as<std::string>());
  EXPECT_TRUE(has_token_env(worker));
  EXPECT_TRUE(worker["resources"]["limits"]["nvidia.com/gpu"]);
}

}  // namespace
}  // namespace lizard
