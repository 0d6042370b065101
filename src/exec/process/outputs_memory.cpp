#include "exec/process/outputs_memory.h"

namespace lizard {

Status OutputsMemory::put(size_t bytes, const std::function<Status(char* to)>& fill, bool* filled) {
  sent();
  auto counted = [&](char* to) {
    *filled = true;
    return fill(to);
  };
  auto loan = lender_.lend(bytes, counted);
  if (loan.ok()) {
    in_ = OutputsIn::kLentFile;
    fd_ = loan->fd;
    loan_ = loan->id;
    return Status::Ok();
  }
  if (*filled) return loan.status();  // the fill itself failed
  LIZARD_ASSIGN_OR_RETURN(sealed_, SealedMemory::make(bytes, counted));
  in_ = OutputsIn::kSealedFile;
  fd_ = sealed_->fd();
  return Status::Ok();
}

void OutputsMemory::describe(ByteWriter* out) const {
  out->u8(static_cast<uint8_t>(in_));
  if (in_ == OutputsIn::kLentFile) out->u64(loan_);
}

void OutputsMemory::sent() {
  sealed_.reset();
  in_ = OutputsIn::kParts;
  fd_ = -1;
  loan_ = 0;
}

}  // namespace lizard
