// SHA-256, used for program checksums and cache keys; OpenSSL's libcrypto
// (EVP) computes it.
//
//   Sha256 h; h.update(a); h.update(b); std::string hex = h.hex_digest();
//   std::string hex = sha256_hex("abc");
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace lizard {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  void update(const void* data, size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> digest();  // finishes the hash
  std::string hex_digest();

 private:
  struct Context;  // libcrypto's digest context
  std::unique_ptr<Context> ctx_;
};

std::string sha256_hex(std::string_view data);

}  // namespace lizard
