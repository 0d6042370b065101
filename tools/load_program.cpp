// load_program DIR URI: registers the program in DIR with the lizard server at
// URI, waits until every connected worker has built it, and prints its checksum.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

#include "common/auth.h"
#include "net/http_client.h"
#include "program/bundle.h"

int main(int argc, char** argv) {
  CLI::App app{"Register a lizard program with a server and print its checksum"};
  std::string dir, uri;
  int timeout = 900;
  std::string token;
  app.add_option("program-dir", dir, "Directory with config.yaml and the sources it lists")
      ->required();
  app.add_option("server-uri", uri, "Server, e.g. http://127.0.0.1:5000")->required();
  app.add_option("--timeout", timeout, "Seconds to wait for the server and its workers");
  app.add_option("--token", token, "The server's token (default: $LIZARD_TOKEN)");
  CLI11_PARSE(app, argc, argv);

  auto bundle = lizard::read_program_dir(dir);
  if (!bundle.ok()) {
    std::cerr << "load_program: " << bundle.status().message() << "\n";
    return 2;
  }
  auto base = lizard::parse_server_uri(uri);
  if (!base.ok()) {
    std::cerr << "load_program: " << base.status().message() << "\n";
    return 2;
  }
  std::string url = "http://" + base->host + ":" + base->port + base->base_path + "/programs";
  auto reply = lizard::http_request("POST", url, bundle->to_json().dump(), "application/json",
                                    timeout, lizard::token_from(token, "LIZARD_TOKEN"));
  if (!reply.ok()) {
    std::cerr << "load_program: " << reply.status().message() << "\n";
    return 1;
  }
  auto j = nlohmann::json::parse(reply->body, nullptr, false);
  if (reply->status != 200 && reply->status != 201) {
    std::string msg =
        j.is_object() && j.contains("error") ? j["error"].get<std::string>() : reply->body;
    std::cerr << "load_program: the server refused the program (HTTP " << reply->status << "):\n"
              << msg << "\n";
    return 1;
  }
  if (j.is_object() && j.contains("workers") && j["workers"].empty())
    std::cerr << "load_program: warning: no worker is connected; workers build it when they join\n";
  std::cout << (j.is_object() ? j.value("hash", "") : "") << "\n";
  return 0;
}
