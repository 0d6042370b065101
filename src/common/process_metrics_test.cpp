#include "common/process_metrics.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

// Fields 1-24 of proc(5)'s stat, the command name holding a space and a ')'.
constexpr const char* kStat =
    "4242 (lizard (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 "
    "1000 123456789 2048 18446744073709551615";

TEST(ProcessMetrics, StatFieldsAfterTheCommandNameAreRead) {
  const ProcessSample s = parse_proc_stat(kStat, 100, 4096, 1700000000.0);
  ASSERT_TRUE(s.cpu_seconds && s.start_time_s && s.virtual_bytes && s.resident_bytes);
  EXPECT_DOUBLE_EQ(*s.cpu_seconds, 3.0);  // (250 + 50) ticks at 100 a second
  EXPECT_DOUBLE_EQ(*s.start_time_s, 1700000010.0);
  EXPECT_EQ(*s.virtual_bytes, 123456789u);
  EXPECT_EQ(*s.resident_bytes, 2048u * 4096u);
}

TEST(ProcessMetrics, WhatCannotBeReadIsLeftOutNotWrittenAsZero) {
  const ProcessSample s = parse_proc_stat("4242 (cut short) S 1 2", 100, 4096, std::nullopt);
  EXPECT_FALSE(s.cpu_seconds || s.start_time_s || s.resident_bytes || s.virtual_bytes);
  MetricsWriter w;
  write_process_metrics(w, s);
  EXPECT_EQ(w.text(), "");
  EXPECT_FALSE(parse_proc_stat(kStat, 100, 4096, std::nullopt).start_time_s);
}

TEST(ProcessMetrics, ThisProcessIsWrittenInTheStandardFamilies) {
  const ProcessSample s = sample_this_process();
  ASSERT_TRUE(s.resident_bytes && s.open_fds && s.cpu_seconds);
  EXPECT_GT(*s.resident_bytes, 0u);
  EXPECT_GE(*s.open_fds, 3u);  // stdin, stdout, stderr at least
  MetricsWriter w;
  write_process_metrics(w, s);
  for (const char* family :
       {"process_cpu_seconds_total", "process_start_time_seconds", "process_resident_memory_bytes",
        "process_virtual_memory_bytes", "process_open_fds", "process_max_fds"})
    EXPECT_NE(w.text().find(std::string("# TYPE ") + family), std::string::npos) << family;
  EXPECT_NE(w.text().find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
}

}  // namespace
}  // namespace lizard
