// The `lizard client` subcommand: the flags a worker daemon takes on its
// command line, read into WorkerOptions (client/worker_daemon.h) and the
// path of its token file.  lizard_main.cpp runs the worker once parsed.
//
//   lizard::WorkerOptions wo;
//   std::string token_file;
//   CLI::App* client = add_client_command(app, &wo, &token_file, &verbose);
//   ... app.parse(argc, argv); if (client->parsed()) run the worker with wo
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "client/worker_daemon.h"

// An option that takes on|off into `value` (which must outlive the parse),
// its default shown as on or off.
CLI::Option* add_on_off(CLI::App* app, const std::string& name, bool& value,
                        const std::string& help);

// `wo`, `token_file` and `verbose` must outlive the parse.
CLI::App* add_client_command(CLI::App& app, lizard::WorkerOptions* wo, std::string* token_file,
                             bool* verbose);
