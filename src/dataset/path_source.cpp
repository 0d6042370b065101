// The `path` source: a file on the machines' shared file system, under the
// data roots ({"path": ..., "format": ..., "verify": ...}).  The server counts
// its rows and notes the version it counted (the file's identity, and with
// "verify": "content" the digest of its bytes: file_content.h), which the
// run pins;
// each worker reads only its own rows on each executor's turn
// ({"source": "path", "path", "format"}), or names the rows its executors
// keep from an earlier run under the file's identity (file_rows_key.h).
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "dataset/dataset_file.h"
#include "dataset/dataset_source.h"
#include "dataset/file_content.h"
#include "dataset/file_rows_key.h"

namespace lizard {

using nlohmann::json;

namespace {

const DataRoots kAnywhere;

Result<FileIdentity> identity_of(const InputFile& file) {
  struct stat st {};
  if (::fstat(file.fd(), &st) != 0)
    return internal_error(file.path() + ": fstat: " + std::strerror(errno));
  return FileIdentity::of(st);
}

class PathSource final : public DatasetSource {
 public:
  std::vector<std::string> request_keys() const override { return {"path", "format", "verify"}; }
  std::vector<std::string> wire_names() const override { return {"path"}; }
  RowDelivery delivery() const override { return RowDelivery::kFile; }

  Result<ParsedSource> parse(const json& spec, const SourceField& field,
                             const SourceContext& context) const override {
    const std::string& what = field.what;
    if (!spec["path"].is_string()) return invalid_argument(what + ": `path` must be a string");
    ParsedSource p;
    p.path = spec["path"].get<std::string>();
    const DataRoots& roots = context.data_roots ? *context.data_roots : kAnywhere;
    auto at = roots.locate(p.path);
    if (!at.ok()) return at.status().with_context(what);
    std::string fmt;
    if (spec.contains("format")) {
      if (!spec["format"].is_string())
        return invalid_argument(what + ": `format` must be a string");
      fmt = spec["format"].get<std::string>();
    }
    auto format = resolve_file_format(fmt, p.path);
    if (!format.ok()) return format.status().with_context(what);
    p.format = format.value();
    FileVerify verify = FileVerify::kIdentity;
    if (spec.contains("verify")) {
      if (!spec["verify"].is_string())
        return invalid_argument(what + ": `verify` must be a string");
      auto v = parse_file_verify(spec["verify"].get<std::string>());
      if (!v.ok()) return v.status().with_context(what);
      verify = *v;
    }
    // Opened without blocking, and only a regular file, before any read.
    auto file = roots.open(at.value());
    if (!file.ok()) return file.status().with_context(what);
    // The version counted is the one the run pins: the same before and after.
    auto before = identity_of(file.value());
    if (!before.ok()) return before.status().with_context(what);
    auto n = count_rows(&file.value(), p.format, field.type, field.width);
    if (!n.ok()) return n.status().with_context(what);
    if (verify == FileVerify::kContent) {
      auto digest = content_sha256(file.value());
      if (!digest.ok()) return digest.status().with_context(what);
      p.content_sha256 = std::move(digest).value();
    }
    auto after = identity_of(file.value());
    if (!after.ok()) return after.status().with_context(what);
    if (*after != *before)
      return Status(Code::kConflict, what + ": " + p.path + " changed while it was read: " +
                                         version_changes(*before, *after) + "; run again");
    p.rows = n.value();
    p.file = *after;
    p.row_source = after->key_prefix();
    return p;
  }

  Status to_wire(const ParsedSource& parsed, const WireRows&, FieldSource* out,
                 std::string*) const override {
    out->delivery = RowDelivery::kFile;
    out->path = parsed.path;
    out->format = file_format_name(parsed.format);
    return Status::Ok();
  }

  void encode(const FieldSource& field, json* out) const override {
    out->update({{"source", "path"}, {"path", field.path}, {"format", field.format}});
  }

  Status decode(std::string_view, const json& in, FieldSource* field) const override {
    field->delivery = RowDelivery::kFile;
    LIZARD_RETURN_IF_ERROR(read_wire(in, "path", &field->path));
    return read_wire(in, "format", &field->format);
  }
};

}  // namespace

std::unique_ptr<const DatasetSource> make_path_source() {
  return std::make_unique<PathSource>();
}

}  // namespace lizard
