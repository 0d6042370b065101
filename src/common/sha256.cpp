#include "common/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace lizard {

namespace {

// libcrypto fails here only when it cannot allocate or its SHA-256 is
// missing (a broken installation); no caller could go on without the hash.
void check(int ok, const char* what) {
  if (ok == 1) return;
  std::fprintf(stderr, "lizard: libcrypto: %s failed\n", what);
  std::abort();
}

}  // namespace

struct Sha256::Context {
  Context() : md(EVP_MD_CTX_new()) {
    check(md != nullptr, "EVP_MD_CTX_new");
    check(EVP_DigestInit_ex(md, EVP_sha256(), nullptr), "EVP_DigestInit_ex(sha256)");
  }
  ~Context() { EVP_MD_CTX_free(md); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  EVP_MD_CTX* md;
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, size_t len) {
  check(EVP_DigestUpdate(ctx_->md, data, len), "EVP_DigestUpdate");
}

std::array<uint8_t, 32> Sha256::digest() {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  check(EVP_DigestFinal_ex(ctx_->md, out.data(), &len), "EVP_DigestFinal_ex");
  check(len == out.size(), "EVP_DigestFinal_ex (length)");
  return out;
}

std::string Sha256::hex_digest() {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.reserve(64);
  for (uint8_t b : digest()) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

}  // namespace lizard
