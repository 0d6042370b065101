// The `upload` source: a dataset uploaded earlier (POST /datasets), by id.
// Its rows are first offered from the workers' caches of earlier runs
// ({"source": "cached", "upload": id, "path": the server's copy, "format"});
// a worker that holds none reads them from the server's copy where it sees
// that very file (the same host, or a shared state directory: the run
// pins its identity), and a worker that does neither is sent them as
// data_chunk messages ({"source": "chunks", "upload": id}).
#include <filesystem>

#include "dataset/dataset_file.h"
#include "dataset/dataset_source.h"
#include "dataset/file_identity.h"

namespace lizard {

using nlohmann::json;

namespace {

class UploadSource final : public DatasetSource {
 public:
  std::vector<std::string> request_keys() const override { return {"upload"}; }
  std::vector<std::string> wire_names() const override { return {"chunks", "cached"}; }
  RowDelivery delivery() const override { return RowDelivery::kCached; }

  Result<ParsedSource> parse(const json& spec, const SourceField& field,
                             const SourceContext& context) const override {
    const std::string& what = field.what;
    if (!spec["upload"].is_string())
      return invalid_argument(what + ": `upload` must be a dataset id");
    if (!context.uploads) return invalid_argument(what + ": uploads are not available here");
    const std::string id = spec["upload"].get<std::string>();
    auto found = context.uploads(id);
    if (!found.ok()) return found.status().with_context(what);
    ParsedSource p;
    p.path = found->first;
    p.format = found->second;
    auto n = count_rows(p.path, p.format, field.type, field.width);
    if (!n.ok()) {
      // The upload's id names the file; its place in the server's state
      // directory means nothing to the client.
      std::string message = n.status().message();
      if (message.rfind(p.path + ": ", 0) == 0) message.erase(0, p.path.size() + 2);
      return Status(n.status().code(), what + " (upload " + id + "): " + message);
    }
    p.rows = n.value();
    p.row_source = upload_id(p) + ":";  // the start of client/upload_cache.h's keys
    // The version of the server's copy a worker that reads it must find.
    if (auto identity = FileIdentity::of(p.path); identity.ok()) p.file = identity.value();
    return p;
  }

  Status to_wire(const ParsedSource& parsed, const WireRows& rows, FieldSource* out,
                 std::string*) const override {
    // The worker may hold these rows from an earlier run; it says when not,
    // and they are then sent just before run_start.
    out->delivery = rows.stream_uploads ? RowDelivery::kChunks : RowDelivery::kCached;
    out->upload = upload_id(parsed);
    if (out->delivery == RowDelivery::kCached && parsed.file) {  // the run pins its version
      out->path = std::filesystem::absolute(parsed.path).lexically_normal().string();
      out->format = file_format_name(parsed.format);
    }
    return Status::Ok();
  }

  void encode(const FieldSource& field, json* out) const override {
    (*out)["source"] = field.delivery == RowDelivery::kChunks ? "chunks" : "cached";
    if (!field.upload.empty()) (*out)["upload"] = field.upload;
    if (!field.path.empty()) out->update({{"path", field.path}, {"format", field.format}});
  }

  Status decode(std::string_view wire_name, const json& in, FieldSource* field) const override {
    field->delivery = wire_name == "chunks" ? RowDelivery::kChunks : RowDelivery::kCached;
    LIZARD_RETURN_IF_ERROR(read_wire(in, "path", &field->path));
    LIZARD_RETURN_IF_ERROR(read_wire(in, "format", &field->format));
    return read_wire(in, "upload", &field->upload);
  }

 private:
  // The server stores an upload as <id>.npy or <id>.raw.
  static std::string upload_id(const ParsedSource& p) {
    return std::filesystem::path(p.path).stem().string();
  }
};

}  // namespace

std::unique_ptr<const DatasetSource> make_upload_source() {
  return std::make_unique<UploadSource>();
}

}  // namespace lizard
