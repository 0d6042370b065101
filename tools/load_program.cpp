// load_program DIR URI: registers the program in DIR with the lizard server at
// URI, waits until every connected worker has built it, and prints its checksum.
// (`lizard run DIR` does the same on its way to a run.)
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/program_loader.h"
#include "common/auth.h"

int main(int argc, char** argv) {
  CLI::App app{"Register a lizard program with a server and print its checksum"};
  std::string dir, uri;
  int timeout = 900;
  std::string token;
  lizard::TlsClientOptions tls;
  app.add_option("program-dir", dir, "Directory with config.yaml and the sources it lists")
      ->required();
  app.add_option("server-uri", uri, "Server, e.g. http://127.0.0.1:5000 or https://head:5000 (TLS)")
      ->required();
  app.add_option("--timeout", timeout,
                 "Seconds to wait for the server and its workers; without an answer by then "
                 "load_program stops with exit status 1");
  app.add_option("--token", token, "The server's token (default: $LIZARD_TOKEN)");
  app.add_flag("--tls", tls.enabled, "The server serves TLS (as an https:// URI says)");
  app.add_option("--tls-ca", tls.ca_file,
                 "PEM file of the CA that signed the server's certificate, instead of the "
                 "system's roots; implies --tls (default: $LIZARD_TLS_CA)")
      ->envname("LIZARD_TLS_CA");
  CLI11_PARSE(app, argc, argv);

  auto bundle = lizard::read_program_dir(dir);
  if (!bundle.ok()) {
    std::cerr << "load_program: " << bundle.status().message() << "\n";
    return 2;
  }
  auto api = lizard::ServerApi::connect(uri, 5000, lizard::token_from(token, "LIZARD_TOKEN"), tls);
  if (!api.ok()) {
    std::cerr << "load_program: " << api.status().message() << "\n";
    return 2;
  }
  auto program = lizard::post_program(*api, *bundle, timeout);
  if (!program.ok()) {
    std::cerr << "load_program: " << program.status().message() << "\n";
    return 1;
  }
  if (program->workers.empty())
    std::cerr << "load_program: warning: no worker is connected; workers build it when they join\n";
  std::cout << program->hash << "\n";
  return 0;
}
