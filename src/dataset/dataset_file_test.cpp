#include "dataset/dataset_file.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <random>

#include "dataset/npy.h"
#include "dataset/test_files.h"

namespace lizard {
namespace {

const std::string kSeed = LIZARD_TEST_DATA_DIR;

std::string error_of(const Status& s) {
  return s.ok() ? "ok" : s.message();
}
template <typename T>
std::string error_of(const Result<T>& r) {
  return r.ok() ? "ok" : r.status().message();
}

template <typename T>
std::vector<T> read(const std::string& path, FileFormat f, DType t, int64_t width, int64_t first,
                    int64_t rows) {
  std::vector<T> out(static_cast<size_t>(rows * width));
  Status s = read_rows(path, f, t, width, first, rows, out.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

// ---- the seed platform's files ------------------------------------------------

TEST(DatasetSeedFiles, KmeansLizardFormat) {
  std::string path = kSeed + "/lizard-kmeans-n2048-d16.txt";
  auto rows = count_rows(path, FileFormat::kLizard, DType::kFloat32, 16);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(*rows, 2048);
  auto first = read<float>(path, FileFormat::kLizard, DType::kFloat32, 16, 0, 1);
  EXPECT_EQ(first[0], 0.352118266675f);
  EXPECT_EQ(first[15], 0.378937013272f);
  auto middle = read<float>(path, FileFormat::kLizard, DType::kFloat32, 16, 999, 1);
  EXPECT_EQ(middle[0], 0.47195895561f);  // the line indexed 1000
  EXPECT_EQ(middle[1], 0.40987398849f);
  auto last = read<float>(path, FileFormat::kLizard, DType::kFloat32, 16, 2047, 1);
  EXPECT_EQ(last[0], 0.260788037735f);
  EXPECT_EQ(last[1], 0.804577716757f);
}

TEST(DatasetSeedFiles, KmeansFileIsNotPlainText) {
  std::string path = kSeed + "/lizard-kmeans-n2048-d16.txt";
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kText, DType::kFloat32, 16)),
            path + ": line 1: expected 16 values, found 1");
}

TEST(DatasetSeedFiles, DemoCsvWithoutFinalNewline) {
  std::string path = kSeed + "/lizard-demo-n2048-d8.csv";
  auto rows = count_rows(path, FileFormat::kCsv, DType::kFloat64, 8);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(*rows, 2048);
  auto head = read<double>(path, FileFormat::kCsv, DType::kFloat64, 8, 0, 2);
  EXPECT_EQ(head[0], 5.137662486561892);
  EXPECT_EQ(head[7], -3.7237093445706186);
  EXPECT_EQ(head[8], 7.2932938551444515);
  auto row999 = read<double>(path, FileFormat::kCsv, DType::kFloat64, 8, 999, 1);
  EXPECT_EQ(row999[0], -5.705088850132409);
  EXPECT_EQ(row999[1], 6.790803452873803);
  auto last = read<double>(path, FileFormat::kCsv, DType::kFloat64, 8, 2047, 1);
  EXPECT_EQ(last[7], 3.3036530030277262);
  EXPECT_EQ(last[6], 8.822465448334182);
}

TEST(DatasetSeedFiles, SmallDemoCsv) {
  std::string path = kSeed + "/lizard-demo-n16-d3.csv";
  EXPECT_EQ(*count_rows(path, FileFormat::kCsv, DType::kFloat32, 3), 16);
  auto first = read<float>(path, FileFormat::kCsv, DType::kFloat32, 3, 0, 1);
  EXPECT_EQ(first,
            (std::vector<float>{1.1426910965411174f, 2.1850418532171556f, -2.120803286928945f}));
  auto last = read<double>(path, FileFormat::kCsv, DType::kFloat64, 3, 15, 1);
  EXPECT_EQ(last, (std::vector<double>{-7.4890276636215365, 9.345619062027815, 4.417817236211352}));
  std::vector<float> none(3);
  EXPECT_EQ(error_of(read_rows(path, FileFormat::kCsv, DType::kFloat32, 3, 15, 2, none.data())),
            path + ": rows [15, 17) were asked for; the file has fewer (did it change?)");
}

// ---- every format holds the same rows -------------------------------------------

std::string shortest(double v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// `values` (rows x width) written in `format`.
std::string encode(FileFormat format, DType t, const std::vector<double>& values, int64_t width) {
  int64_t rows = static_cast<int64_t>(values.size()) / width;
  std::vector<uint8_t> typed(values.size() * dtype_size(t));
  visit_dtype(t, [&](auto x) {
    using T = decltype(x);
    for (size_t i = 0; i < values.size(); ++i)
      reinterpret_cast<T*>(typed.data())[i] = static_cast<T>(values[i]);
  });
  if (format == FileFormat::kNpy) return npy_bytes(t, {rows, width}, typed.data());
  if (format == FileFormat::kRaw) return std::string(typed.begin(), typed.end());
  std::string out = format == FileFormat::kLizard ? std::to_string(rows) + "\n" : "";
  for (int64_t r = 0; r < rows; ++r) {
    if (format == FileFormat::kLizard) out += std::to_string(r + 1) + " ";
    for (int64_t c = 0; c < width; ++c) {
      if (c) out += format == FileFormat::kCsv ? "," : (c % 2 ? " " : " \t ");
      out += shortest(values[r * width + c]);
    }
    out += "\n";
  }
  return out;
}

const FileFormat kAllFormats[] = {FileFormat::kNpy, FileFormat::kRaw, FileFormat::kCsv,
                                  FileFormat::kText, FileFormat::kLizard};

template <typename T>
void expect_every_partition_reads_back(DType t, const std::vector<double>& values, int64_t width) {
  TempDir dir;
  const int64_t rows = static_cast<int64_t>(values.size()) / width;
  for (FileFormat f : kAllFormats) {
    SCOPED_TRACE(file_format_name(f));
    std::string path =
        dir.write(std::string("data.") + file_format_name(f), encode(f, t, values, width));
    auto counted = count_rows(path, f, t, width);
    ASSERT_TRUE(counted.ok()) << counted.status().message();
    EXPECT_EQ(*counted, rows);
    const int64_t ranges[][2] = {{0, rows},     {0, 1},  {1, 5},   {rows / 2, rows - rows / 2},
                                 {rows - 1, 1}, {37, 0}, {rows, 0}};
    for (const auto& [first, n] : ranges) {
      std::vector<T> got = read<T>(path, f, t, width, first, n);
      for (int64_t i = 0; i < n * width; ++i)
        ASSERT_EQ(got[i], static_cast<T>(values[first * width + i]))
            << "rows [" << first << ", " << first + n << ") element " << i;
    }
  }
}

TEST(DatasetFile, PartialReadsOfFloatsMatchInEveryFormat) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1e3, 1e3);
  std::vector<double> values(1000 * 3);
  for (double& v : values) v = dist(rng);
  expect_every_partition_reads_back<double>(DType::kFloat64, values, 3);
  for (double& v : values) v = static_cast<float>(v);
  expect_every_partition_reads_back<float>(DType::kFloat32, values, 3);
}

TEST(DatasetFile, PartialReadsOfIntegersMatchInEveryFormat) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> dist(-100000, 100000);
  std::vector<double> values(500 * 4);
  for (double& v : values) v = dist(rng);
  expect_every_partition_reads_back<int32_t>(DType::kInt32, values, 4);
  for (double& v : values) v = std::floor(std::abs(v) / 400);  // 0..250
  expect_every_partition_reads_back<uint8_t>(DType::kUInt8, values, 4);
}

TEST(DatasetFile, TextLargerThanTheReadBuffer) {
  TempDir dir;
  std::string text;
  const int64_t rows = 400000;  // about 7 MB
  for (int64_t r = 0; r < rows; ++r) text += std::to_string(r) + "," + std::to_string(-r) + "\n";
  std::string path = dir.write("big.csv", text);
  EXPECT_EQ(*count_rows(path, FileFormat::kCsv, DType::kInt64, 2), rows);
  auto got = read<int64_t>(path, FileFormat::kCsv, DType::kInt64, 2, 333333, 1000);
  for (int64_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(got[2 * i], 333333 + i);
    ASSERT_EQ(got[2 * i + 1], -(333333 + i));
  }
}

TEST(DatasetFile, NpyOfOneDimensionAndOfSeveral) {
  TempDir dir;
  const int32_t v[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  std::string flat = dir.write("flat.npy", npy_bytes(DType::kInt32, {12}, v));
  EXPECT_EQ(*count_rows(flat, FileFormat::kNpy, DType::kInt32, 1), 12);
  std::string cube = dir.write("cube.npy", npy_bytes(DType::kInt32, {2, 3, 2}, v));
  EXPECT_EQ(*count_rows(cube, FileFormat::kNpy, DType::kInt32, 6), 2);
  EXPECT_EQ(read<int32_t>(cube, FileFormat::kNpy, DType::kInt32, 6, 1, 1),
            (std::vector<int32_t>{6, 7, 8, 9, 10, 11}));
}

TEST(DatasetFile, TextToleratesCrlfTrailingBlanksAndSpacing) {
  TempDir dir;
  std::string csv = dir.write("a.csv",
                              "\xEF\xBB\xBF"
                              "1, 2 ,3\r\n4,5,6\r\n\r\n  \n");
  EXPECT_EQ(error_of(count_rows(csv, FileFormat::kCsv, DType::kInt16, 3)), "ok");
  EXPECT_EQ(read<int16_t>(csv, FileFormat::kCsv, DType::kInt16, 3, 0, 2),
            (std::vector<int16_t>{1, 2, 3, 4, 5, 6}));
  std::string txt = dir.write("a.txt", "  1\t2   3\n4 5 6  \n");
  EXPECT_EQ(*count_rows(txt, FileFormat::kText, DType::kInt64, 3), 2);
  EXPECT_EQ(read<int64_t>(txt, FileFormat::kText, DType::kInt64, 3, 1, 1),
            (std::vector<int64_t>{4, 5, 6}));
}

TEST(DatasetFile, CsvAndTextHeaderLinesAreSkipped) {
  TempDir dir;
  std::string csv = dir.write("h.csv",
                              "\xEF\xBB\xBF"
                              "x, y ,z\n1,2,3\n4,5,6\n7,8,9\n");
  EXPECT_EQ(error_of(count_rows(csv, FileFormat::kCsv, DType::kInt32, 3)), "ok");
  EXPECT_EQ(*count_rows(csv, FileFormat::kCsv, DType::kInt32, 3), 3);
  EXPECT_EQ(read<int32_t>(csv, FileFormat::kCsv, DType::kInt32, 3, 0, 3),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(read<int32_t>(csv, FileFormat::kCsv, DType::kInt32, 3, 1, 2),
            (std::vector<int32_t>{4, 5, 6, 7, 8, 9}));
  std::string txt = dir.write("h.txt", "a\tb\n1.5 2.5\n3.5 4.5\n");
  EXPECT_EQ(*count_rows(txt, FileFormat::kText, DType::kFloat64, 2), 2);
  EXPECT_EQ(read<double>(txt, FileFormat::kText, DType::kFloat64, 2, 1, 1),
            (std::vector<double>{3.5, 4.5}));
  // Without a header, reads from row 0 and later rows are unchanged.
  std::string plain = dir.write("p.csv", "1,2\n3,4\n");
  EXPECT_EQ(read<int32_t>(plain, FileFormat::kCsv, DType::kInt32, 2, 0, 1),
            (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(read<int32_t>(plain, FileFormat::kCsv, DType::kInt32, 2, 1, 1),
            (std::vector<int32_t>{3, 4}));
  std::string only = dir.write("o.csv", "x,y\n");
  EXPECT_EQ(*count_rows(only, FileFormat::kCsv, DType::kInt32, 2), 0);
}

TEST(DatasetFileErrors, HeaderFollowedByABadRowSaysSo) {
  TempDir dir;
  std::string path = dir.write("h.csv", "x,y\nname,value\n1,2\n");
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kCsv, DType::kFloat32, 2)),
            path + ": line 2: value 1: expected a number (float32) (line 1 was read as a header)");
  // A first line with some numbers is a row, and its error names it.
  std::string partial = dir.write("p.csv", "1,y\n1,2\n");
  EXPECT_EQ(error_of(count_rows(partial, FileFormat::kCsv, DType::kFloat32, 2)),
            partial + ": line 1: value 2: expected a number (float32)");
  // The lizard format has no header: its first line is the row count.
  std::string lizard = dir.write("k.txt", "x y\n");
  EXPECT_EQ(error_of(count_rows(lizard, FileFormat::kLizard, DType::kFloat32, 1)),
            lizard + ": line 1: expected the row count (a non-negative integer)");
}

// ---- bad files ------------------------------------------------------------------

TEST(DatasetFileErrors, MissingFile) {
  std::string path = "/nonexistent/dir/points.npy";
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kNpy, DType::kFloat32, 2)),
            "cannot open " + path + ": No such file or directory");
  float buf[2];
  EXPECT_EQ(error_of(read_rows(path, FileFormat::kCsv, DType::kFloat32, 2, 0, 1, buf)),
            "cannot open " + path + ": No such file or directory");
}

TEST(DatasetFileErrors, NpyOfTheWrongDtype) {
  TempDir dir;
  const double v[4] = {1, 2, 3, 4};
  std::string path = dir.write("d.npy", npy_bytes(DType::kFloat64, {2, 2}, v));
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kNpy, DType::kFloat32, 2)),
            path + ": expected <f4 (float32), file has <f8 (float64)");
  float buf[2];
  EXPECT_EQ(error_of(read_rows(path, FileFormat::kNpy, DType::kFloat32, 2, 0, 1, buf)),
            path + ": expected <f4 (float32), file has <f8 (float64)");
  // A shape that does not fit either is named in the same message.
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kNpy, DType::kFloat32, 3)),
            path +
                ": expected <f4 (float32), file has <f8 (float64); shape (2, 2) does not hold "
                "rows of 3 values; expected (rows, ...) with dimensions after rows multiplying "
                "to 3");
}

TEST(DatasetFileErrors, TruncatedNpy) {
  TempDir dir;
  const float v[8] = {};
  std::string whole = npy_bytes(DType::kFloat32, {4, 2}, v);  // 128-byte header + 32 bytes
  std::string path = dir.write("t.npy", whole.substr(0, whole.size() - 5));
  // Errors say what the header implies, never how large the file is.
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kNpy, DType::kFloat32, 2)),
            path + ": truncated: the file ends before the data its header describes");
  std::string header_only = dir.write("h.npy", whole.substr(0, 50));
  EXPECT_NE(error_of(count_rows(header_only, FileFormat::kNpy, DType::kFloat32, 2))
                .find(": truncated .npy header: the file ends inside it"),
            std::string::npos);
  std::string longer = dir.write("l.npy", whole + "xyz");
  EXPECT_NE(error_of(count_rows(longer, FileFormat::kNpy, DType::kFloat32, 2))
                .find(": unexpected bytes after the data its header describes"),
            std::string::npos);
  std::string not_npy = dir.write("n.npy", "1,2\n3,4\n");
  EXPECT_EQ(error_of(count_rows(not_npy, FileFormat::kNpy, DType::kFloat32, 2)),
            not_npy + ": not an .npy file (it does not start with \\x93NUMPY)");
}

TEST(DatasetFileErrors, NpyShapeOrOrderThatDoesNotFit) {
  TempDir dir;
  const float v[12] = {};
  std::string path = dir.write("s.npy", npy_bytes(DType::kFloat32, {3, 4}, v));
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kNpy, DType::kFloat32, 3)),
            path +
                ": shape (3, 4) does not hold rows of 3 values; expected (rows, ...) with "
                "dimensions after rows multiplying to 3");
  std::string flat = dir.write("f.npy", npy_bytes(DType::kFloat32, {12}, v));
  EXPECT_NE(error_of(count_rows(flat, FileFormat::kNpy, DType::kFloat32, 4)).find("shape (12,)"),
            std::string::npos);
  std::string fortran = npy_bytes(DType::kFloat32, {3, 4}, v);
  fortran.replace(fortran.find("False"), 5, "True ");
  std::string fpath = dir.write("fortran.npy", fortran);
  EXPECT_NE(error_of(count_rows(fpath, FileFormat::kNpy, DType::kFloat32, 4)).find("Fortran order"),
            std::string::npos);
}

TEST(DatasetFileErrors, RawSizeNotAMultipleOfTheRow) {
  TempDir dir;
  std::string path = dir.write("r.bin", std::string(100, '\0'));
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kRaw, DType::kFloat32, 3)),
            path + ": the file is not a whole number of rows of 12 bytes (3 float32 values)");
  EXPECT_EQ(*count_rows(path, FileFormat::kRaw, DType::kInt32, 5), 5);
  std::vector<int32_t> buf(10);
  EXPECT_EQ(error_of(read_rows(path, FileFormat::kRaw, DType::kInt32, 5, 4, 2, buf.data())),
            path + ": rows [4, 6) were asked for; the file has fewer (did it change?)");
}

TEST(DatasetFileErrors, RaggedCsvNamesTheLine) {
  TempDir dir;
  std::string path = dir.write("r.csv", "1,2,3\n4,5,6\n7,8\n9,10,11\n");
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kCsv, DType::kFloat32, 3)),
            path + ": line 3: expected 3 values, found 2");
  std::vector<float> buf(6);
  EXPECT_EQ(error_of(read_rows(path, FileFormat::kCsv, DType::kFloat32, 3, 1, 2, buf.data())),
            path + ": line 3: expected 3 values, found 2");
  std::string wide = dir.write("w.txt", "1 2 3\n4 5 6 7\n");
  EXPECT_EQ(error_of(count_rows(wide, FileFormat::kText, DType::kFloat32, 3)),
            wide + ": line 2: expected 3 values, found 4");
}

TEST(DatasetFileErrors, ValuesThatAreNotNumbersOfTheType) {
  TempDir dir;
  std::string path = dir.write("v.csv", "1,2\n3,abc\n");
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kCsv, DType::kFloat32, 2)),
            path + ": line 2: value 2: expected a number (float32)");
  std::string frac = dir.write("i.csv", "1,2\n1.5,2\n");
  EXPECT_EQ(error_of(count_rows(frac, FileFormat::kCsv, DType::kInt32, 2)),
            frac + ": line 2: value 1: expected an integer (int32)");
  EXPECT_EQ(*count_rows(frac, FileFormat::kCsv, DType::kFloat32, 2), 2);
  std::string empty = dir.write("e.csv", "1,,2\n");
  EXPECT_EQ(error_of(count_rows(empty, FileFormat::kCsv, DType::kInt32, 3)),
            empty + ": line 1: value 2: expected a number (int32)");
  std::string range = dir.write("u.txt", "255 256\n");
  EXPECT_EQ(error_of(count_rows(range, FileFormat::kText, DType::kUInt8, 2)),
            range + ": line 1: value 2: out of range for uint8");
}

TEST(DatasetFileErrors, BlankLineBetweenRows) {
  TempDir dir;
  std::string path = dir.write("b.csv", "1,2\n\n3,4\n");
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kCsv, DType::kInt32, 2)),
            path + ": line 2: blank line between rows (the next row is on line 3)");
}

TEST(DatasetFileErrors, LizardRowCount) {
  TempDir dir;
  std::string path = dir.write("k.txt", "5\n1 0.5 0.5\n2 1 1\n3 2 2\n4 3 3\n");
  EXPECT_EQ(error_of(count_rows(path, FileFormat::kLizard, DType::kFloat32, 2)),
            path + ": line 1: declares 5 rows; the rows that follow are not that many");
  std::string bad = dir.write("c.txt", "rows\n1 0.5 0.5\n");
  EXPECT_EQ(error_of(count_rows(bad, FileFormat::kLizard, DType::kFloat32, 2)),
            bad + ": line 1: expected the row count (a non-negative integer)");
  std::string empty = dir.write("e.txt", "");
  EXPECT_EQ(error_of(count_rows(empty, FileFormat::kLizard, DType::kFloat32, 2)),
            empty + ": the file is empty; expected the row count on line 1");
  std::string short_row = dir.write("s.txt", "1\n1 0.5\n");
  EXPECT_EQ(error_of(count_rows(short_row, FileFormat::kLizard, DType::kFloat32, 2)),
            short_row + ": line 2: expected 2 values after the row index, found 1");
}

TEST(DatasetFileErrors, BadArguments) {
  TempDir dir;
  std::string path = dir.write("a.csv", "1\n2\n");
  EXPECT_NE(error_of(count_rows(path, FileFormat::kCsv, DType::kInt32, 0)).find("at least one"),
            std::string::npos);
  int32_t buf[2];
  EXPECT_NE(error_of(read_rows(path, FileFormat::kCsv, DType::kInt32, 1, -1, 1, buf))
                .find("bad row range"),
            std::string::npos);
  EXPECT_EQ(error_of(read_rows(path, FileFormat::kCsv, DType::kInt32, 1, 3, 1, buf)),
            path + ": rows [3, 4) were asked for; the file has fewer (did it change?)");
}

}  // namespace
}  // namespace lizard
