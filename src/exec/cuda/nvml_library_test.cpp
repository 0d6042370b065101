#include "exec/cuda/nvml_library.h"

#include <gtest/gtest.h>

namespace lizard::cuda {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(NvmlLibrary, MissingLibraryIsUnavailable) {
  auto n = NvmlLibrary::load_from({"/nonexistent/libnvidia-ml.so.1"});
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), Code::kUnavailable);
  EXPECT_NE(n.status().message().find("NVML not found"), std::string::npos);
}

TEST(NvmlLibrary, LibraryWithoutNvmlIsUnavailable) {
  auto n = NvmlLibrary::load_from({"libm.so.6"});
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("lacks the entry points"), std::string::npos);
}

#ifdef LIZARD_FAKE_NVML
TEST(NvmlLibrary, FindsGpusByPciBusIdAndReadsTheirLoad) {
  auto n = NvmlLibrary::load_from({LIZARD_FAKE_NVML});
  ASSERT_TRUE(n.ok()) << n.status().message();
  auto d = (*n)->device("0000:3b:00.0");  // CUDA may spell it in lower case
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*n)->utilization(*d).value(), 37);
  auto m = (*n)->memory(*d);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->first, 60 * kGiB);
  EXPECT_EQ(m->second, 80 * kGiB);
  EXPECT_EQ((*n)->utilization((*n)->device("0000:86:00.0").value()).value(), 90);

  auto missing = (*n)->device("0000:01:00.0");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no NVML device at PCI bus id 0000:01:00.0: Not Found"),
            std::string::npos)
      << missing.status().message();
}

TEST(NvmlLibrary, ShutsNvmlDownWhenReleased) {
  auto lib = SharedLibrary::open(LIZARD_FAKE_NVML);
  ASSERT_TRUE(lib.ok());
  auto open_count = lib->symbol<int (*)()>("fake_nvml_open_count");
  ASSERT_NE(open_count, nullptr);
  const int before = open_count();
  {
    auto n = NvmlLibrary::load_from({LIZARD_FAKE_NVML});
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(open_count(), before + 1);
  }
  EXPECT_EQ(open_count(), before);
}
#endif

}  // namespace
}  // namespace lizard::cuda
