#include "common/lent_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace lizard {
namespace {

std::function<Status(char*)> writes(const std::string& bytes) {
  return [&bytes](char* to) {
    std::memcpy(to, bytes.data(), bytes.size());
    return Status::Ok();
  };
}

std::string borrowed_bytes(const MemoryLender::Loan& loan, size_t bytes, bool* returned) {
  auto mapped = BorrowedMemory::map(OwnedFd(::dup(loan.fd)), bytes, [=] { *returned = true; });
  EXPECT_TRUE(mapped.ok()) << mapped.status().message();
  return mapped.ok() ? std::string((*mapped)->bytes()) : std::string();
}

// A file is lent until it is given back: meanwhile the next fill goes to
// another, or to none; once back, it is filled again.
TEST(MemoryLender, FillsAFileAgainOnlyOnceItIsGivenBack) {
  MemoryLender lender(2);
  const std::string a(3 << 20, 'a'), b(5 << 20, 'b'), c(1 << 20, 'c');
  auto first = lender.lend(a.size(), writes(a));
  auto second = lender.lend(b.size(), writes(b));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(first->id, second->id);
  bool called = false;
  auto none = lender.lend(c.size(), [&](char*) {
    called = true;
    return Status::Ok();
  });
  EXPECT_EQ(none.status().code(), Code::kUnavailable);
  EXPECT_FALSE(called) << "a lent file was filled";
  bool returned = false;
  EXPECT_EQ(borrowed_bytes(*first, a.size(), &returned), a);
  EXPECT_TRUE(returned) << "the mapping's end gives the loan back";
  lender.returned({first->id, 999});  // an id never lent is ignored
  auto again = lender.lend(c.size(), writes(c));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, first->id);
  EXPECT_EQ(borrowed_bytes(*again, c.size(), &returned), c);
  EXPECT_EQ(borrowed_bytes(*second, b.size(), &returned), b) << "the other, untouched";
  EXPECT_EQ(lender.files(), 2u);
}

// A free file too small for the next fill is replaced, under a new id.
TEST(MemoryLender, AFreeFileTooSmallIsReplaced) {
  MemoryLender lender(1);
  const std::string small(1 << 20, 's'), large(9 << 20, 'l');
  auto first = lender.lend(small.size(), writes(small));
  ASSERT_TRUE(first.ok());
  lender.returned({first->id});
  auto second = lender.lend(large.size(), writes(large));
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_NE(second->id, first->id);
  bool returned = false;
  EXPECT_EQ(borrowed_bytes(*second, large.size(), &returned), large);
  EXPECT_EQ(lender.lend(0, writes(small)).status().code(), Code::kUnavailable);
}

TEST(MemoryLender, AFillThatFailsLendsNothing) {
  MemoryLender lender(1);
  auto failed = lender.lend(4096, [](char*) { return internal_error("device lost"); });
  EXPECT_EQ(failed.status().message(), "device lost");
  const std::string x(4096, 'x');
  EXPECT_TRUE(lender.lend(x.size(), writes(x)).ok()) << "the file is still free";
}

// A borrower maps only a file that cannot shrink under it, of at least the
// size announced.
TEST(BorrowedMemory, RefusesAFileThatCanShrinkOrIsSmallerThanAnnounced) {
  OwnedFd loose(::memfd_create("loose", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(::ftruncate(loose.get(), 1 << 20), 0);
  auto mapped = BorrowedMemory::map(std::move(loose), 1 << 20, nullptr);
  EXPECT_EQ(mapped.status().code(), Code::kInvalidArgument);
  MemoryLender lender(1);
  const std::string x(1 << 20, 'x');
  auto loan = lender.lend(x.size(), writes(x));
  ASSERT_TRUE(loan.ok());
  EXPECT_NE(::ftruncate(loan->fd, 10), 0) << "sealed against shrinking";
  auto larger = BorrowedMemory::map(OwnedFd(::dup(loan->fd)), size_t{64} << 20, nullptr);
  EXPECT_EQ(larger.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace lizard
