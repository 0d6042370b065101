// PieceDigest: the digest by which an upload is known again.  It is the
// SHA-256 of the concatenated SHA-256s of the bytes' 16 MiB pieces (the last
// one shorter; no bytes, no pieces), so that a client can hash the pieces of
// a large array on all its cores while the server hashes them as they arrive.
// The Python client computes the same (lizard/_digest.py).
//
//   PieceDigest d;
//   d.update(data, size);              // as the bytes come, in any split
//   std::string hex = d.hex_digest();  // finishes it
//   std::string same = piece_digest_of(sha256_of_each_piece);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/sha256.h"

namespace lizard {

class PieceDigest {
 public:
  static constexpr size_t kPieceBytes = size_t{16} << 20;

  void update(const void* data, size_t size);
  std::string hex_digest();

 private:
  void end_piece();

  Sha256 piece_;
  Sha256 pieces_;  // over the digests of the pieces that are complete
  size_t in_piece_ = 0;
};

// The same digest from the SHA-256s of the pieces, hashed apart (on several
// threads, as server/upload_pipeline.h does), in order.
std::string piece_digest_of(const std::vector<std::array<uint8_t, 32>>& pieces);

}  // namespace lizard
