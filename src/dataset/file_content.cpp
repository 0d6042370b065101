#include "dataset/file_content.h"

#include <vector>

#include "common/sha256.h"

namespace lizard {

Result<FileVerify> parse_file_verify(const std::string& text) {
  if (text == "identity") return FileVerify::kIdentity;
  if (text == "content") return FileVerify::kContent;
  return invalid_argument("`verify` must be \"identity\" (the default) or \"content\", not \"" +
                          text + "\"");
}

Result<std::string> content_sha256(const InputFile& file) {
  constexpr size_t kChunk = size_t{4} << 20;
  std::vector<uint8_t> chunk(kChunk);
  Sha256 hash;
  for (uint64_t at = 0; at < file.size();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, file.size() - at));
    LIZARD_RETURN_IF_ERROR(file.read_at(at, n, chunk.data()));
    hash.update(chunk.data(), n);
    at += n;
  }
  return hash.hex_digest();
}

Status check_pinned_content(const PinnedFile& pin) {
  if (pin.content_sha256.empty()) return Status::Ok();
  auto file = InputFile::open(pin.path);
  if (!file.ok())
    return Status(Code::kConflict,
                  pin.path + " is gone since the run first read it: " + file.status().message());
  LIZARD_ASSIGN_OR_RETURN(std::string now, content_sha256(*file));
  if (now == pin.content_sha256) return Status::Ok();
  return Status(Code::kConflict,
                pin.path + " changed since the run first read it: its content (SHA-256 " +
                    pin.content_sha256.substr(0, 12) + "… -> " + now.substr(0, 12) +
                    "…) (a run reads one version of its files; run again)");
}

}  // namespace lizard
