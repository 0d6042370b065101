// ByteWriter and ByteReader: the little-endian binary layout the daemons
// and their helper processes speak over a FrameChannel (the executor
// protocol, exec/process/executor_protocol.h, and the hook protocol,
// hooks/hook_protocol.h): fixed-width integers and doubles, and byte strings
// as a u64 length and the bytes.
//
//   ByteWriter w;  w.u8(op);  w.bytes(state);  channel.send(w.out());
//   ByteWriter into(&buffer);  // appends to a buffer the caller reuses: no allocation
//                              // once its capacity has grown to the messages' size
//   ByteReader r(frame);  uint8_t op = r.u8();  ...;  if (!r.ok()) error;
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lizard {

class ByteWriter {
 public:
  ByteWriter() = default;
  // Appends to *into, which must outlive the writer.
  explicit ByteWriter(std::string* into) : out_(into) {}
  ByteWriter(ByteWriter&& o) noexcept
      : own_(std::move(o.own_)), out_(o.out_ == &o.own_ ? &own_ : o.out_) {}
  ByteWriter& operator=(ByteWriter&&) = delete;
  ByteWriter(const ByteWriter&) = delete;
  ByteWriter& operator=(const ByteWriter&) = delete;

  void u8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void u64(uint64_t v);
  // u64()'s 8 bytes, into `out`.
  static void put_u64(uint64_t v, char* out);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void i32(int32_t v);
  void f64(double v);
  void bytes(std::string_view b) {
    u64(b.size());
    out_->append(b);
  }
  // A byte string's length alone; its bytes follow as a part of their own.
  void length(uint64_t n) { u64(n); }
  // Appends bytes as they are, with no length before them.
  void raw(std::string_view b) { out_->append(b); }
  std::string& out() { return *out_; }

 private:
  std::string own_;
  std::string* out_ = &own_;
};

// Reads what ByteWriter wrote; a read past the end sets ok() to false and
// yields zeros, so a decoder checks ok() once at its end.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  uint8_t u8();
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  int32_t i32();
  double f64();
  std::string_view bytes();
  std::string str() { return std::string(bytes()); }
  std::string_view rest();
  // Bytes not read yet.
  size_t left() const { return ok_ ? in_.size() - pos_ : 0; }
  bool ok() const { return ok_; }
  Status status(const char* what) const;

 private:
  bool take(size_t n, const char** p);
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace lizard
