#include "net/tls_context.h"

#include <gtest/gtest.h>

#include "dataset/test_files.h"

namespace lizard {
namespace {

TEST(TlsContext, UnusableServerFilesAreNamedWithTheProblem) {
  auto missing = make_server_tls_context("/no/such/cert.pem", "/no/such/key.pem");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "--tls-cert /no/such/cert.pem: cannot read it");

  TempDir dir;
  const std::string junk = dir.write("junk.pem", "not a certificate\n");
  auto not_pem = make_server_tls_context(junk, junk);
  ASSERT_FALSE(not_pem.ok());
  EXPECT_EQ(not_pem.status().message().rfind("--tls-cert " + junk + ": not a PEM certificate", 0),
            0u)
      << not_pem.status().message();
}

TEST(TlsContext, AClientTrustsTheSystemOrAReadableCaFile) {
  EXPECT_TRUE(make_client_tls_context("").ok());  // the system's roots
  auto missing = make_client_tls_context("/no/such/ca.pem");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "--tls-ca /no/such/ca.pem: cannot read it");
  TempDir dir;
  const std::string junk = dir.write("junk.pem", "not a certificate\n");
  auto not_pem = make_client_tls_context(junk);
  ASSERT_FALSE(not_pem.ok());
  EXPECT_NE(not_pem.status().message().find("not a PEM certificate"), std::string::npos)
      << not_pem.status().message();
}

}  // namespace
}  // namespace lizard
