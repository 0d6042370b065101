#include "dataset/npy.h"

#include <cctype>
#include <cstring>
#include <limits>

namespace lizard {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;

uint32_t read_le(std::string_view b, size_t pos, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(b[pos + i])) << (8 * i);
  return v;
}

// The preamble length (magic, version, length field) for a version byte.
size_t preamble_length(uint8_t major) {
  return major == 1 ? 10 : 12;
}

// A reader for the Python dict literal of an .npy header.
class DictParser {
 public:
  explicit DictParser(std::string_view text) : text_(text) {}

  Status parse(NpyHeader* h) {
    bool has_descr = false, has_order = false, has_shape = false;
    LIZARD_RETURN_IF_ERROR(expect('{'));
    while (true) {
      skip_space();
      if (peek() == '}') break;
      std::string key;
      LIZARD_RETURN_IF_ERROR(parse_string(&key));
      LIZARD_RETURN_IF_ERROR(expect(':'));
      if (key == "descr") {
        LIZARD_RETURN_IF_ERROR(parse_descr(h));
        has_descr = true;
      } else if (key == "fortran_order") {
        LIZARD_RETURN_IF_ERROR(parse_bool(&h->fortran_order));
        has_order = true;
      } else if (key == "shape") {
        LIZARD_RETURN_IF_ERROR(parse_shape(&h->shape));
        has_shape = true;
      } else {
        return error("unexpected key '" + key + "'");
      }
      skip_space();
      if (peek() != ',' && peek() != '}') return error("expected ',' or '}'");
      if (peek() == ',') ++pos_;
    }
    if (!has_descr || !has_order || !has_shape)
      return error("the header must have the keys 'descr', 'fortran_order' and 'shape'");
    return Status::Ok();
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  Status error(const std::string& what) const {
    return invalid_argument("malformed .npy header: " + what + " at character " +
                            std::to_string(pos_));
  }
  Status expect(char c) {
    skip_space();
    if (peek() != c) return error(std::string("expected '") + c + "'");
    ++pos_;
    return Status::Ok();
  }

  Status parse_string(std::string* out) {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') return error("expected a quoted string");
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) return error("unterminated string");
    *out = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return Status::Ok();
  }

  Status parse_descr(NpyHeader* h) {
    skip_space();
    if (peek() == '[')
      return invalid_argument(".npy files with structured dtypes are not supported");
    LIZARD_RETURN_IF_ERROR(parse_string(&h->descr));
    if (!parse_npy_descr(h->descr, &h->dtype))
      return invalid_argument("unsupported .npy dtype '" + h->descr +
                              "' (supported: little-endian int8..int64, uint8..uint64, float32, "
                              "float64)");
    return Status::Ok();
  }

  Status parse_bool(bool* out) {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      size_t n = std::strlen(word);
      if (text_.substr(pos_, n) == word) {
        pos_ += n;
        *out = value;
        return Status::Ok();
      }
    }
    return error("expected True or False");
  }

  Status parse_shape(std::vector<int64_t>* shape) {
    LIZARD_RETURN_IF_ERROR(expect('('));
    while (true) {
      skip_space();
      if (peek() == ')') break;
      int64_t dim;
      LIZARD_RETURN_IF_ERROR(parse_dim(&dim));
      shape->push_back(dim);
      skip_space();
      if (peek() == 'L') ++pos_;  // Python 2 long literal
      skip_space();
      if (peek() != ',' && peek() != ')') return error("expected ',' or ')' in the shape");
      if (peek() == ',') ++pos_;
    }
    ++pos_;
    return Status::Ok();
  }

  Status parse_dim(int64_t* out) {
    size_t start = pos_;
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      int digit = peek() - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return error("dimension too large");
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) return error("expected a non-negative integer dimension");
    *out = v;
    return Status::Ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

Status check_size(const NpyHeader& h) {
  uint64_t total = dtype_size(h.dtype);
  for (int64_t d : h.shape) {
    if (d != 0 && total > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d)
      return invalid_argument(".npy shape is too large");
    total *= static_cast<uint64_t>(d);
  }
  return Status::Ok();
}

}  // namespace

int64_t NpyHeader::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

uint64_t NpyHeader::data_bytes() const {
  return static_cast<uint64_t>(elements()) * dtype_size(dtype);
}

Result<size_t> npy_header_length(std::string_view b) {
  if (b.size() < kMagicLen || std::memcmp(b.data(), kMagic, kMagicLen) != 0)
    return invalid_argument("not an .npy file (it does not start with \\x93NUMPY)");
  if (b.size() < 10) return invalid_argument("truncated .npy header");
  uint8_t major = static_cast<uint8_t>(b[6]), minor = static_cast<uint8_t>(b[7]);
  if (major < 1 || major > 3 || minor != 0)
    return invalid_argument("unsupported .npy version " + std::to_string(major) + "." +
                            std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  size_t pre = preamble_length(major);
  if (b.size() < pre) return invalid_argument("truncated .npy header");
  return pre + read_le(b, 8, pre - 8);
}

Result<NpyHeader> parse_npy_header(std::string_view header) {
  LIZARD_ASSIGN_OR_RETURN(size_t length, npy_header_length(header));
  if (header.size() < length)
    return invalid_argument("truncated .npy header: it needs " + std::to_string(length) +
                            " bytes, the file has " + std::to_string(header.size()));
  size_t pre = preamble_length(static_cast<uint8_t>(header[6]));
  NpyHeader h;
  h.data_offset = length;
  LIZARD_RETURN_IF_ERROR(DictParser(header.substr(pre, length - pre)).parse(&h));
  LIZARD_RETURN_IF_ERROR(check_size(h));
  return h;
}

std::string npy_shape_literal(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string npy_header(DType dtype, const std::vector<int64_t>& shape) {
  std::string dict = std::string("{'descr': '") + dtype_npy_descr(dtype) +
                     "', 'fortran_order': False, 'shape': " + npy_shape_literal(shape) + ", }";
  size_t pre = 10;
  size_t total = (pre + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  if (total - pre > 0xffff) {
    pre = 12;
    total = (pre + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
  }
  size_t len = total - pre;
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(pre == 10 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < pre - 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += dict;
  out.append(total - out.size() - 1, ' ');
  out += '\n';
  return out;
}

std::string npy_bytes(DType dtype, const std::vector<int64_t>& shape, const void* data) {
  std::string out = npy_header(dtype, shape);
  size_t n = dtype_size(dtype);
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  out.append(static_cast<const char*>(data), n);
  return out;
}

}  // namespace lizard
