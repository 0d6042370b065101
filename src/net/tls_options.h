// TlsClientOptions: how a client (the `lizard` commands, load_program, a
// worker) reaches a server that serves TLS.  A plain value, free of Boost and
// OpenSSL, so that option structs and command lines can hold it.
//
//   TlsClientOptions tls{true, "ca.pem"};   // TLS, trusting the CA in ca.pem
//   TlsClientOptions tls{true, ""};         // TLS, trusting the system's roots
#pragma once

#include <string>

namespace lizard {

struct TlsClientOptions {
  // TLS even where the address names no scheme ("host", "host:port"); an
  // https:// or wss:// address asks for it by itself.
  bool enabled = false;
  // A PEM file with the certificate authorities to trust; empty: the
  // system's roots.  The server's certificate is always verified, and so is
  // its host name (or IP address) against the address dialled.
  std::string ca_file;
};

}  // namespace lizard
