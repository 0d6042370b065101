// Rows an executor reads from a file itself (exec/file_rows.h) and their
// chunked load through staging buffers (exec/chunked_load.h): the right
// bytes for any row range and chunk size, and a file that changed after the
// worker located its rows is refused, never read stale.
#include "exec/file_rows.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "dataset/npy.h"
#include "dataset/test_files.h"
#include "exec/chunked_load.h"

namespace lizard {
namespace {

constexpr int64_t kWidth = 3;  // float32 values per row: 12-byte rows

// An npy file of `rows` rows of kWidth float32, value i at element i.
std::string write_npy(const TempDir& dir, const std::string& name, int64_t rows, float first = 0) {
  std::vector<float> v(static_cast<size_t>(rows * kWidth));
  std::iota(v.begin(), v.end(), first);
  return dir.write(name, npy_bytes(DType::kFloat32, {rows, kWidth}, v.data()));
}

std::vector<float> expected_rows(int64_t first_row, int64_t rows, float first = 0) {
  std::vector<float> v(static_cast<size_t>(rows * kWidth));
  std::iota(v.begin(), v.end(), first + static_cast<float>(first_row * kWidth));
  return v;
}

Result<std::vector<float>> read_range(const std::string& path, int64_t first_row, int64_t rows,
                                      int threads) {
  LIZARD_ASSIGN_OR_RETURN(FileRows where, locate_file_rows(path, FileFormat::kNpy, DType::kFloat32,
                                                           kWidth, first_row, rows));
  std::vector<float> out(static_cast<size_t>(rows * kWidth));
  LIZARD_RETURN_IF_ERROR(read_file_rows(where, out.data(), threads));
  return out;
}

TEST(FileRows, ReadsAnyRowRange) {
  TempDir dir;
  const int64_t rows = 1000003;  // 12 MB: several read threads' slices of odd sizes
  const std::string path = write_npy(dir, "x.npy", rows);
  struct Range {
    int64_t first, count;
  };
  for (Range r : {Range{0, rows}, Range{0, 1}, Range{rows - 1, 1}, Range{12345, 500000},
                  Range{rows / 2, rows - rows / 2}, Range{7, 0}}) {
    for (int threads : {1, 3, 8}) {
      auto got = read_range(path, r.first, r.count, threads);
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(*got, expected_rows(r.first, r.count))
          << "rows " << r.first << "+" << r.count << " on " << threads << " threads";
    }
  }
}

TEST(FileRows, LocatesTheRowsAfterTheHeaderAndRefusesRowsPastTheEnd) {
  TempDir dir;
  const std::string path = write_npy(dir, "x.npy", 10);
  auto where = locate_file_rows(path, FileFormat::kNpy, DType::kFloat32, kWidth, 4, 6);
  ASSERT_TRUE(where.ok()) << where.status().message();
  EXPECT_EQ(where->offset % 64, 48u);  // the header pads the data to 64 bytes; then 4 rows of 12
  EXPECT_EQ(where->size, 6u * 12);
  auto past = locate_file_rows(path, FileFormat::kNpy, DType::kFloat32, kWidth, 4, 7);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("past its 10 rows"), std::string::npos)
      << past.status().message();
  // The header is checked against the field, as count_rows() does.
  EXPECT_FALSE(locate_file_rows(path, FileFormat::kNpy, DType::kFloat64, kWidth, 0, 1).ok());
  EXPECT_FALSE(locate_file_rows(path, FileFormat::kCsv, DType::kFloat32, kWidth, 0, 1).ok());
}

TEST(FileRows, AFileRewrittenInPlaceAfterItWasLocatedIsRefused) {
  TempDir dir;
  const std::string path = write_npy(dir, "x.npy", 100);
  auto where = locate_file_rows(path, FileFormat::kNpy, DType::kFloat32, kWidth, 0, 100);
  ASSERT_TRUE(where.ok()) << where.status().message();
  // Same size, same inode, other rows: only the modification time tells.
  // (File systems stamp times at the kernel's tick: a rewrite within the
  // same tick as the write before it cannot be told apart.)
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_npy(dir, "x.npy", 100, 5000);
  std::vector<float> out(300, -1);
  Status st = read_file_rows(*where, out.data(), 2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("changed"), std::string::npos) << st.message();
  EXPECT_EQ(out[0], -1);  // nothing read
}

TEST(FileRows, AFileReplacedByARenameIsRefused) {
  TempDir dir;
  const std::string path = write_npy(dir, "x.npy", 100);
  auto where = locate_file_rows(path, FileFormat::kNpy, DType::kFloat32, kWidth, 0, 100);
  ASSERT_TRUE(where.ok()) << where.status().message();
  const std::string other = write_npy(dir, "y.npy", 100, 5000);
  ASSERT_EQ(std::rename(other.c_str(), path.c_str()), 0);
  auto open = OpenRows::open(*where);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("changed"), std::string::npos);
  // Located again, the new file's rows are read.
  auto got = read_range(path, 0, 100, 2);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, expected_rows(0, 100, 5000));
}

TEST(FileRows, AFileGoneIsAClearError) {
  TempDir dir;
  const std::string path = write_npy(dir, "x.npy", 10);
  auto where = locate_file_rows(path, FileFormat::kNpy, DType::kFloat32, kWidth, 0, 10);
  ASSERT_TRUE(where.ok());
  ASSERT_EQ(std::remove(path.c_str()), 0);
  Status st = OpenRows::open(*where).status();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot open " + path), std::string::npos) << st.message();
}

// A destination that takes chunks "asynchronously": each send is applied
// only when its buffer is waited for, or at the end, as a GPU copy lands.
struct FakeDevice {
  std::vector<uint8_t> memory;
  struct Pending {
    bool set = false;
    uint64_t at = 0;
    size_t n = 0;
    std::vector<uint8_t> bytes;  // what the buffer held when sent
  };
  std::vector<Pending> pending;
  std::vector<uint8_t*> buffers;
  int waits = 0;

  void land(size_t b) {
    Pending& p = pending[b];
    if (!p.set) return;
    std::memcpy(memory.data() + p.at, p.bytes.data(), p.n);
    p.set = false;
  }
  ChunkSink sink() {
    ChunkSink s;
    s.send = [this](size_t b, uint64_t at, size_t n) {
      EXPECT_FALSE(pending[b].set) << "buffer " << b << " reused before it was waited for";
      pending[b] = {true, at, n, std::vector<uint8_t>(buffers[b], buffers[b] + n)};
      return Status::Ok();
    };
    s.wait = [this](size_t b) {
      ++waits;
      land(b);
      return Status::Ok();
    };
    return s;
  }
};

TEST(ChunkedLoad, EveryChunkSizeAndBufferCountGivesTheRows) {
  TempDir dir;
  const int64_t rows = 4099;  // 49188 bytes: no chunk size below divides it evenly
  const std::string path = write_npy(dir, "x.npy", rows);
  auto where = locate_file_rows(path, FileFormat::kNpy, DType::kFloat32, kWidth, 17, rows - 20);
  ASSERT_TRUE(where.ok()) << where.status().message();
  const std::vector<float> want = expected_rows(17, rows - 20);
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}, size_t{40000}, size_t{1} << 20}) {
    for (size_t nbuf : {size_t{1}, size_t{2}, size_t{3}}) {
      auto open = OpenRows::open(*where);
      ASSERT_TRUE(open.ok());
      std::vector<std::vector<uint8_t>> storage(nbuf, std::vector<uint8_t>(chunk));
      FakeDevice dev;
      dev.memory.assign(where->size, 0);
      dev.pending.resize(nbuf);
      for (auto& s : storage) dev.buffers.push_back(s.data());
      LoadTimes times;
      Status st = load_in_chunks(*open, dev.buffers, chunk, 2, dev.sink(), &times);
      ASSERT_TRUE(st.ok()) << st.message();
      for (size_t b = 0; b < nbuf; ++b) dev.land(b);  // the caller's final synchronise
      EXPECT_EQ(std::memcmp(dev.memory.data(), want.data(), where->size), 0)
          << "chunk " << chunk << ", " << nbuf << " buffers";
      EXPECT_EQ(times.bytes, where->size);
      const size_t chunks = (where->size + chunk - 1) / chunk;
      EXPECT_EQ(static_cast<size_t>(dev.waits), chunks > nbuf ? chunks - nbuf : 0);
    }
  }
}

TEST(ChunkedLoad, AFileChangedDuringTheLoadIsAnError) {
  TempDir dir;
  const std::string path = write_npy(dir, "x.npy", 1000);
  auto where = locate_file_rows(path, FileFormat::kNpy, DType::kFloat32, kWidth, 0, 1000);
  ASSERT_TRUE(where.ok());
  auto open = OpenRows::open(*where);
  ASSERT_TRUE(open.ok());
  std::vector<uint8_t> a(1024), b(1024);
  std::vector<uint8_t*> buffers{a.data(), b.data()};
  int sent = 0;
  ChunkSink sink;
  sink.send = [&](size_t, uint64_t, size_t) {
    if (++sent == 2) {  // written to in place mid-load
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      write_npy(dir, "x.npy", 1000, 1);
    }
    return Status::Ok();
  };
  sink.wait = [](size_t) { return Status::Ok(); };
  Status st = load_in_chunks(*open, buffers, 1024, 1, sink, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("changed while it was read"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace lizard
