// OutputsMemory: where an executor process puts a run's large output fields
// for the reply to end_run (executor_protocol.h): a memory file it lends to
// the worker again and again (common/lent_memory.h), so that the fields are
// written into pages that already exist, else, while that file is still
// lent, a sealed one made for this reply (common/sealed_memory.h).  The
// process holds that one file for as long as it lives: as large as the
// largest outputs it has lent, rounded up to 2 MiB, outputs over 1 GiB
// always going in sealed files.
//
//   OutputsMemory outputs;                       // one per executor process
//   outputs.given_back(read_loans(&request));
//   Status st = outputs.put(bytes, fill, &filled);
//   outputs.describe(&reply);                    // OutputsIn, and the loan's id
//   channel.send_with_descriptor(parts, n, outputs.fd());   // when fd() >= 0
//   outputs.sent();
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "common/byte_codec.h"
#include "common/lent_memory.h"
#include "common/sealed_memory.h"
#include "common/status.h"
#include "exec/process/executor_protocol.h"

namespace lizard {

class OutputsMemory {
 public:
  // The worker is done with these loans.
  void given_back(const std::vector<uint64_t>& ids) { lender_.returned(ids); }
  // `bytes` of outputs, which `fill` writes, into a memory file; *filled
  // says whether `fill` was called (an error without it: no file at all).
  Status put(size_t bytes, const std::function<Status(char* to)>& fill, bool* filled);
  // Where the reply's outputs are: OutputsIn, then a lent file's loan id.
  void describe(ByteWriter* out) const;
  // The file to pass with the reply; -1 when the outputs go as parts.
  int fd() const { return fd_; }
  // The reply is sent, or its outputs go as parts after all.
  void sent();

 private:
  // One file: a run's outputs have almost always gone on by the time the
  // next run on this executor ends (those that have not go in sealed ones).
  MemoryLender lender_{1};
  std::optional<SealedMemory> sealed_;
  OutputsIn in_ = OutputsIn::kParts;
  int fd_ = -1;
  uint64_t loan_ = 0;
};

}  // namespace lizard
