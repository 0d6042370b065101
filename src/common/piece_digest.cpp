#include "common/piece_digest.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace lizard {

void PieceDigest::update(const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const size_t n = std::min(size, kPieceBytes - in_piece_);
    piece_.update(bytes, n);
    in_piece_ += n;
    bytes += n;
    size -= n;
    if (in_piece_ == kPieceBytes) end_piece();
  }
}

std::string PieceDigest::hex_digest() {
  if (in_piece_ > 0) end_piece();
  return pieces_.hex_digest();
}

void PieceDigest::end_piece() {
  const std::array<uint8_t, 32> d = piece_.digest();
  pieces_.update(d.data(), d.size());
  piece_ = Sha256();
  in_piece_ = 0;
}

std::string piece_digest_of(const std::vector<std::array<uint8_t, 32>>& pieces) {
  Sha256 all;
  for (const auto& d : pieces) all.update(d.data(), d.size());
  return all.hex_digest();
}

}  // namespace lizard
