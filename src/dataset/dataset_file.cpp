#include "dataset/dataset_file.h"

#include <limits>
#include <string_view>
#include <vector>

#include "dataset/input_file.h"
#include "dataset/line_reader.h"
#include "dataset/npy.h"
#include "dataset/number_text.h"

namespace lizard {
namespace {

Status check_width(int64_t width, DType dtype) {
  if (width < 1) return invalid_argument("a dataset row must hold at least one value");
  if (static_cast<uint64_t>(width) > std::numeric_limits<uint64_t>::max() / 2 / dtype_size(dtype))
    return invalid_argument("dataset rows of " + std::to_string(width) + " values are too large");
  return Status::Ok();
}

Status check_range(const std::string& path, int64_t first_row, int64_t rows) {
  if (first_row < 0 || rows < 0)
    return invalid_argument(path + ": bad row range: first_row " + std::to_string(first_row) +
                            ", rows " + std::to_string(rows));
  return Status::Ok();
}

Status past_end(const std::string& path, int64_t first_row, int64_t rows) {
  return invalid_argument(path + ": rows [" + std::to_string(first_row) + ", " +
                          std::to_string(first_row + rows) +
                          ") were asked for; the file has fewer (did it change?)");
}

// ---- npy and raw: fixed-size rows after a header -----------------------------

// A dtype and a shape that both differ are reported together, so that one
// fix of the file is enough.
Status check_npy_header(const std::string& path, const NpyHeader& h, DType dtype, int64_t width) {
  std::string problems;
  if (h.dtype != dtype)
    problems = std::string("expected ") + dtype_npy_descr(dtype) + " (" + dtype_name(dtype) +
               "), file has " + h.descr + " (" + dtype_name(h.dtype) + ")";
  int64_t trailing = 1;
  for (size_t i = 1; i < h.shape.size(); ++i) trailing *= h.shape[i];
  if (h.shape.empty() || trailing != width) {
    std::string expected = width == 1 ? "(rows,) or (rows, 1)"
                                      : "(rows, ...) with dimensions after rows multiplying to " +
                                            std::to_string(width);
    problems += (problems.empty() ? "" : "; ") + std::string("shape ") +
                npy_shape_literal(h.shape) + " does not hold rows of " + std::to_string(width) +
                " values; expected " + expected;
  }
  if (!problems.empty()) return invalid_argument(path + ": " + problems);
  if (h.fortran_order)
    return invalid_argument(path + ": the array is in Fortran order; save it in C order " +
                            "(numpy.ascontiguousarray)");
  return Status::Ok();
}

Result<BinaryRows> npy_layout(const InputFile& f, DType dtype, int64_t width) {
  const std::string& path = f.path();
  Result<NpyHeader> h = read_npy_header(f);
  if (!h.ok()) return h.status().with_context(path);
  LIZARD_RETURN_IF_ERROR(check_npy_header(path, *h, dtype, width));
  uint64_t available = f.size() - h->data_offset;
  // Errors say what the header implies, never the file's size.
  if (available < h->data_bytes())
    return invalid_argument(path + ": truncated: the file ends before the data its header " +
                            "describes");
  if (available > h->data_bytes())
    return invalid_argument(path + ": unexpected bytes after the data its header describes");
  return BinaryRows{h->data_offset, static_cast<uint64_t>(width) * dtype_size(dtype), h->shape[0]};
}

Result<BinaryRows> raw_layout(const InputFile& f, DType dtype, int64_t width) {
  uint64_t row_bytes = static_cast<uint64_t>(width) * dtype_size(dtype);
  if (f.size() % row_bytes != 0)
    return invalid_argument(f.path() + ": the file is not a whole number of rows of " +
                            std::to_string(row_bytes) + " bytes (" + std::to_string(width) + " " +
                            dtype_name(dtype) + " values)");
  return BinaryRows{0, row_bytes, static_cast<int64_t>(f.size() / row_bytes)};
}

Result<BinaryRows> binary_layout(const InputFile& f, FileFormat format, DType dtype,
                                 int64_t width) {
  return format == FileFormat::kNpy ? npy_layout(f, dtype, width) : raw_layout(f, dtype, width);
}

Status read_binary_rows(const InputFile& f, FileFormat format, DType dtype, int64_t width,
                        int64_t first_row, int64_t rows, void* dst) {
  LIZARD_ASSIGN_OR_RETURN(BinaryRows layout, binary_layout(f, format, dtype, width));
  if (first_row + rows > layout.rows) return past_end(f.path(), first_row, rows);
  return f.read_at(layout.data_offset + static_cast<uint64_t>(first_row) * layout.row_bytes,
                   static_cast<size_t>(rows) * layout.row_bytes, dst);
}

// ---- csv, text, lizard: one row per line -------------------------------------

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_blank(std::string_view line) {
  return trim(line).empty();
}

void strip_bom(std::string_view* line) {
  if (line->substr(0, 3) == "\xEF\xBB\xBF") line->remove_prefix(3);
}

// The values of one line: comma-separated (csv) or whitespace-separated.
class ValueTokens {
 public:
  ValueTokens(std::string_view line, bool csv) : rest_(line), csv_(csv) {}

  bool next(std::string_view* value) {
    if (csv_) {
      if (done_) return false;
      size_t comma = rest_.find(',');
      done_ = comma == std::string_view::npos;
      *value = trim(rest_.substr(0, comma));
      rest_ = done_ ? std::string_view() : rest_.substr(comma + 1);
      return true;
    }
    size_t i = 0;
    while (i < rest_.size() && is_space(rest_[i])) ++i;
    if (i == rest_.size()) return false;
    size_t j = i;
    while (j < rest_.size() && !is_space(rest_[j])) ++j;
    *value = rest_.substr(i, j - i);
    rest_ = rest_.substr(j);
    return true;
  }

 private:
  std::string_view rest_;
  bool csv_;
  bool done_ = false;
};

// What a value that did not parse should have been.  Errors about files
// never quote them: a file named by path may not be the user's.
std::string expected_number(NumberError e, DType t) {
  const std::string type = dtype_name(t);
  switch (e) {
    case NumberError::kNotAnInteger:
      return "expected an integer (" + type + ")";
    case NumberError::kOutOfRange:
      return "out of range for " + type;
    default:
      return "expected a number (" + type + ")";
  }
}

// What the text of one file looks like, and where errors point.
struct TextFile {
  const std::string& path;
  FileFormat format;
  DType dtype;
  int64_t width;

  Status error(int64_t line, const std::string& what) const {
    return invalid_argument(path + ": line " + std::to_string(line) + ": " + what);
  }
};

// Parses one row's line into out[0, width).
template <typename T>
Status parse_row(const TextFile& tf, std::string_view line, int64_t line_number, T* out) {
  const bool lizard = tf.format == FileFormat::kLizard;
  ValueTokens tokens(line, tf.format == FileFormat::kCsv);
  std::string_view value;
  if (lizard) tokens.next(&value);  // the row index
  int64_t found = 0;
  int64_t bad = -1;  // index of the first value that does not parse
  NumberError bad_error = NumberError::kNone;
  while (tokens.next(&value)) {
    if (found < tf.width && bad < 0) {
      NumberError e = parse_number(value, out + found);
      if (e != NumberError::kNone) {
        bad = found;
        bad_error = e;
      }
    }
    ++found;
  }
  if (found != tf.width)
    return tf.error(line_number, "expected " + std::to_string(tf.width) + " values" +
                                     (lizard ? " after the row index" : "") + ", found " +
                                     std::to_string(found));
  if (bad >= 0)
    return tf.error(line_number, "value " + std::to_string(bad + 1) + ": " +
                                     expected_number(bad_error, tf.dtype));
  return Status::Ok();
}

// A csv or text file may start with a line of column names: a first line in
// which no value is a number.  A line with some numbers is a row, so that a
// bad row is reported rather than dropped.
bool is_header(const TextFile& tf, std::string_view line) {
  if (tf.format != FileFormat::kCsv && tf.format != FileFormat::kText) return false;
  ValueTokens tokens(line, tf.format == FileFormat::kCsv);
  std::string_view value;
  bool named = false;
  while (tokens.next(&value)) {
    double number;
    if (parse_number(value, &number) == NumberError::kNone) return false;
    named = named || !value.empty();
  }
  return named;
}

// Reads the lizard format's first line: the number of rows that follow.
Status read_declared_rows(const TextFile& tf, LineReader* lines, int64_t* declared) {
  std::string_view line;
  if (!lines->next(&line)) {
    LIZARD_RETURN_IF_ERROR(lines->status());
    return invalid_argument(tf.path + ": the file is empty; expected the row count on line 1");
  }
  strip_bom(&line);
  std::string_view count = trim(line);
  if (parse_number(count, declared) != NumberError::kNone || *declared < 0)
    return tf.error(1, "expected the row count (a non-negative integer)");
  return Status::Ok();
}

template <typename T>
Result<int64_t> count_text_rows(InputFile* f, const TextFile& tf) {
  LineReader lines(f);
  int64_t declared = -1;
  if (tf.format == FileFormat::kLizard)
    LIZARD_RETURN_IF_ERROR(read_declared_rows(tf, &lines, &declared));
  std::vector<T> scratch(static_cast<size_t>(tf.width));
  int64_t rows = 0;
  int64_t blank_line = 0;  // first blank line seen, if any
  std::string_view line;
  while (lines.next(&line)) {
    if (lines.line_number() == 1) strip_bom(&line);
    if (is_blank(line)) {
      if (blank_line == 0) blank_line = lines.line_number();
      continue;
    }
    if (blank_line != 0)
      return tf.error(blank_line, "blank line between rows (the next row is on line " +
                                      std::to_string(lines.line_number()) + ")");
    if (lines.line_number() == 1 && is_header(tf, line)) continue;
    Status row = parse_row(tf, line, lines.line_number(), scratch.data());
    if (!row.ok() && rows == 0 && lines.line_number() == 2 && tf.format != FileFormat::kLizard)
      return invalid_argument(row.message() + " (line 1 was read as a header)");
    LIZARD_RETURN_IF_ERROR(row);
    ++rows;
  }
  LIZARD_RETURN_IF_ERROR(lines.status());
  if (declared >= 0 && declared != rows)
    return tf.error(1, "declares " + std::to_string(declared) +
                           " rows; the rows that follow are not that many");
  return rows;
}

template <typename T>
Status read_text_rows(InputFile* f, const TextFile& tf, int64_t first_row, int64_t rows, T* dst) {
  LineReader lines(f);
  if (tf.format == FileFormat::kLizard) {
    int64_t declared;
    LIZARD_RETURN_IF_ERROR(read_declared_rows(tf, &lines, &declared));
  }
  // Line 1 is read first: it is a header, or row 0 (kept when it is asked for).
  std::string_view line;
  bool first_line_pending = false;
  int64_t to_skip = first_row;
  if (tf.format != FileFormat::kLizard && lines.next(&line)) {
    strip_bom(&line);
    if (!is_header(tf, line)) {
      first_line_pending = first_row == 0;
      to_skip = first_row == 0 ? 0 : first_row - 1;
    }
  }
  LIZARD_RETURN_IF_ERROR(lines.status());
  int64_t skipped = lines.skip(to_skip);
  LIZARD_RETURN_IF_ERROR(lines.status());
  if (skipped < to_skip) return past_end(tf.path, first_row, rows);
  for (int64_t r = 0; r < rows; ++r) {
    if (first_line_pending) {
      first_line_pending = false;
    } else if (!lines.next(&line)) {
      LIZARD_RETURN_IF_ERROR(lines.status());
      return past_end(tf.path, first_row, rows);
    }
    if (is_blank(line))
      return tf.error(lines.line_number(),
                      "blank line where row " + std::to_string(first_row + r) + " was expected");
    LIZARD_RETURN_IF_ERROR(parse_row(tf, line, lines.line_number(), dst + r * tf.width));
  }
  return Status::Ok();
}

bool is_binary(FileFormat f) {
  return f == FileFormat::kNpy || f == FileFormat::kRaw;
}

}  // namespace

Result<int64_t> count_rows(const std::string& path, FileFormat format, DType dtype, int64_t width) {
  LIZARD_RETURN_IF_ERROR(check_width(width, dtype));
  LIZARD_ASSIGN_OR_RETURN(InputFile file, InputFile::open(path));
  return count_rows(&file, format, dtype, width);
}

Result<int64_t> count_rows(InputFile* file, FileFormat format, DType dtype, int64_t width) {
  LIZARD_RETURN_IF_ERROR(check_width(width, dtype));
  if (is_binary(format)) {
    LIZARD_ASSIGN_OR_RETURN(BinaryRows layout, binary_layout(*file, format, dtype, width));
    return layout.rows;
  }
  TextFile tf{file->path(), format, dtype, width};
  return visit_dtype(dtype, [&](auto t) { return count_text_rows<decltype(t)>(file, tf); });
}

Status read_rows(const std::string& path, FileFormat format, DType dtype, int64_t width,
                 int64_t first_row, int64_t rows, void* dst) {
  LIZARD_RETURN_IF_ERROR(check_width(width, dtype));
  LIZARD_RETURN_IF_ERROR(check_range(path, first_row, rows));
  LIZARD_ASSIGN_OR_RETURN(InputFile file, InputFile::open(path));
  return read_rows(&file, format, dtype, width, first_row, rows, dst);
}

Status read_rows(InputFile* file, FileFormat format, DType dtype, int64_t width, int64_t first_row,
                 int64_t rows, void* dst) {
  LIZARD_RETURN_IF_ERROR(check_width(width, dtype));
  LIZARD_RETURN_IF_ERROR(check_range(file->path(), first_row, rows));
  if (is_binary(format)) return read_binary_rows(*file, format, dtype, width, first_row, rows, dst);
  TextFile tf{file->path(), format, dtype, width};
  return visit_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    return read_text_rows<T>(file, tf, first_row, rows, static_cast<T*>(dst));
  });
}

Result<BinaryRows> binary_rows(const std::string& path, FileFormat format, DType dtype,
                               int64_t width) {
  LIZARD_ASSIGN_OR_RETURN(InputFile file, InputFile::open(path));
  return binary_rows(file, format, dtype, width);
}

Result<BinaryRows> binary_rows(const InputFile& file, FileFormat format, DType dtype,
                               int64_t width) {
  LIZARD_RETURN_IF_ERROR(check_width(width, dtype));
  if (!is_binary(format))
    return invalid_argument(file.path() + ": " + file_format_name(format) +
                            " rows have no fixed place in the file");
  return binary_layout(file, format, dtype, width);
}

Result<NpyHeader> read_npy_header(const InputFile& file) {
  std::string head(std::min<uint64_t>(file.size(), kNpyPreambleMax), '\0');
  LIZARD_RETURN_IF_ERROR(file.read_at(0, head.size(), head.data()));
  LIZARD_ASSIGN_OR_RETURN(size_t length, npy_header_length(head));
  if (length > file.size())
    return invalid_argument("truncated .npy header: the file ends inside it");
  head.resize(length);
  LIZARD_RETURN_IF_ERROR(file.read_at(0, head.size(), head.data()));
  return parse_npy_header(head);
}

}  // namespace lizard
