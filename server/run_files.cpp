#include "server/run_files.h"

#include "dataset/file_content.h"
#include "protocol/run_spec_schema.h"

namespace lizard {

using nlohmann::json;
using PinnedFilesCodec = wire_schema::ListCodec<wire_schema::ObjectOf<WireSchema<PinnedFile>>>;

namespace {

std::string what(const PinnedFile& pin) {
  return "dataset field '" + pin.field + "'";
}

}  // namespace

json pinned_files_json(const std::vector<PinnedFile>& files) {
  return PinnedFilesCodec::write(files);
}

Result<std::vector<PinnedFile>> pinned_files_of(const json& record) {
  std::vector<PinnedFile> out;
  if (!record.is_object() || !record.contains("files")) return out;
  if (std::string why = PinnedFilesCodec::read(record["files"], &out); !why.empty())
    return invalid_argument("the stored record's files" + why);
  return out;
}

Status check_files_unchanged(const std::vector<PinnedFile>& pinned) {
  for (const PinnedFile& pin : pinned) {
    Result<FileIdentity> now = FileIdentity::of(pin.path);
    if (!now.ok())
      return Status(Code::kConflict,
                    what(pin) + ": " + pin.path +
                        " is gone since the run first read it: " + now.status().message());
    LIZARD_RETURN_IF_ERROR(check_pinned(pin, *now).with_context(what(pin)));
    LIZARD_RETURN_IF_ERROR(check_pinned_content(pin).with_context(what(pin)));
  }
  return Status::Ok();
}

Status check_contents_unchanged(const std::vector<PinnedFile>& pinned) {
  for (const PinnedFile& pin : pinned)
    LIZARD_RETURN_IF_ERROR(check_pinned_content(pin).with_context(what(pin)));
  return Status::Ok();
}

Status check_same_versions(const std::vector<PinnedFile>& pinned,
                           const std::vector<PinnedFile>& now) {
  for (const PinnedFile& pin : pinned)
    for (const PinnedFile& found : now)
      if (found.field == pin.field && found.path == pin.path)
        LIZARD_RETURN_IF_ERROR(check_pinned(pin, found.identity).with_context(what(pin)));
  return Status::Ok();
}

}  // namespace lizard
