// SHA-256 (FIPS 180-4), used for program checksums and cache keys.
//
//   Sha256 h; h.update(a); h.update(b); std::string hex = h.hex_digest();
//   std::string hex = sha256_hex("abc");
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lizard {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> digest();  // finishes the hash
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);

}  // namespace lizard
