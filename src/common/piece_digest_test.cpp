#include "common/piece_digest.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace lizard {
namespace {

std::string pieces_by_hand(const std::string& bytes) {
  Sha256 outer;
  for (size_t at = 0; at < bytes.size(); at += PieceDigest::kPieceBytes) {
    Sha256 piece;
    piece.update(std::string_view(bytes).substr(at, PieceDigest::kPieceBytes));
    const std::array<uint8_t, 32> d = piece.digest();
    outer.update(d.data(), d.size());
  }
  return outer.hex_digest();
}

TEST(PieceDigest, NoBytesIsTheSha256OfNothing) {
  EXPECT_EQ(PieceDigest().hex_digest(), sha256_hex(""));
}

TEST(PieceDigest, SmallBodyIsTheSha256OfItsOneDigest) {
  PieceDigest d;
  d.update("abc", 3);
  EXPECT_EQ(d.hex_digest(), pieces_by_hand("abc"));
  EXPECT_NE(d.hex_digest(), sha256_hex("abc"));
}

// Pieces end at 16 MiB whatever sizes the bytes come in.
TEST(PieceDigest, AnySplitGivesTheDigestOfItsPieces) {
  std::string bytes(2 * PieceDigest::kPieceBytes + 12345, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  const std::string want = pieces_by_hand(bytes);
  for (size_t split : {size_t{1} << 20, size_t{65537}, PieceDigest::kPieceBytes, bytes.size()}) {
    PieceDigest d;
    for (size_t at = 0; at < bytes.size(); at += split)
      d.update(bytes.data() + at, std::min(split, bytes.size() - at));
    EXPECT_EQ(d.hex_digest(), want) << "split " << split;
  }
  std::string exact(PieceDigest::kPieceBytes, 'z');  // no empty last piece
  PieceDigest d;
  d.update(exact.data(), exact.size());
  EXPECT_EQ(d.hex_digest(), pieces_by_hand(exact));
}

// One changed byte changes the digest.
TEST(PieceDigest, OneChangedByteChangesIt) {
  std::string bytes(PieceDigest::kPieceBytes + 10, 'a');
  PieceDigest a;
  a.update(bytes.data(), bytes.size());
  bytes[PieceDigest::kPieceBytes + 3] = 'b';
  PieceDigest b;
  b.update(bytes.data(), bytes.size());
  EXPECT_NE(a.hex_digest(), b.hex_digest());
}

}  // namespace
}  // namespace lizard
