#include "common/byte_codec.h"

#include <cstring>

namespace lizard {

void ByteWriter::put_u64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void ByteWriter::u64(uint64_t v) {
  char b[8];
  put_u64(v, b);
  out_->append(b, 8);
}

void ByteWriter::i32(int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  for (int i = 0; i < 4; ++i) out_->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

void ByteWriter::f64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  u64(bits);
}

bool ByteReader::take(size_t n, const char** p) {
  if (!ok_ || in_.size() - pos_ < n) {
    ok_ = false;
    return false;
  }
  *p = in_.data() + pos_;
  pos_ += n;
  return true;
}

uint8_t ByteReader::u8() {
  const char* p;
  return take(1, &p) ? static_cast<uint8_t>(*p) : 0;
}

uint64_t ByteReader::u64() {
  const char* p;
  if (!take(8, &p)) return 0;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

int32_t ByteReader::i32() {
  const char* p;
  if (!take(4, &p)) return 0;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return static_cast<int32_t>(v);
}

double ByteReader::f64() {
  uint64_t bits = u64();
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::string_view ByteReader::bytes() {
  const uint64_t n = u64();
  const char* p;
  if (n > in_.size() || !take(static_cast<size_t>(n), &p)) {
    ok_ = false;
    return {};
  }
  return {p, static_cast<size_t>(n)};
}

std::string_view ByteReader::rest() {
  if (!ok_) return {};
  std::string_view r = in_.substr(pos_);
  pos_ = in_.size();
  return r;
}

Status ByteReader::status(const char* what) const {
  return ok_ ? Status::Ok() : internal_error(std::string("a truncated ") + what + " frame");
}

}  // namespace lizard
