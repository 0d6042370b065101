#include "cli/dataset_staging.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "dataset/dataset_file.h"
#include "dataset/file_identity.h"
#include "dataset/npy.h"
#include "program/layout.h"

namespace lizard {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string input_fields(const Manifest& m) {
  std::string out;
  for (const auto& f : m.dataset)
    if (f.input) out += (out.empty() ? "" : ", ") + f.name;
  return out;
}

// A temporary file that is removed when it goes out of scope.
class TempFile {
 public:
  TempFile() {
    std::error_code ec;
    std::string dir = fs::temp_directory_path(ec).string();
    std::string tmpl = (dir.empty() ? "/tmp" : dir) + "/lizard-upload-XXXXXX";
    const int fd = mkstemp(tmpl.data());
    if (fd >= 0) {
      close(fd);
      path_ = tmpl;
    }
  }
  ~TempFile() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Reads a text file as rows of `field` and writes them to `out` as .npy.
Status text_to_npy(const std::string& file, FileFormat format, const FieldSpec& field,
                   int64_t width, const std::string& out) {
  LIZARD_ASSIGN_OR_RETURN(int64_t rows, count_rows(file, format, field.type, width));
  std::vector<uint8_t> data(static_cast<size_t>(rows * width) * dtype_size(field.type));
  LIZARD_RETURN_IF_ERROR(read_rows(file, format, field.type, width, 0, rows, data.data()));
  std::vector<int64_t> shape = {rows};
  if (field.shape.size() > 1) shape.push_back(width);
  std::ofstream o(out, std::ios::binary | std::ios::trunc);
  o << npy_header(field.type, shape);
  o.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!o) return internal_error("cannot write " + out);
  return Status::Ok();
}

// Uploads one file; text formats are converted to .npy first.
Result<std::string> upload_one(const ServerApi& api, const Manifest& m, const ParamValues& params,
                               const FieldSpec& field, const std::string& file, FileFormat format,
                               std::ostream* log) {
  if (log) *log << "uploading " << file << " for dataset field '" << field.name << "'\n";
  Result<json> answer = invalid_argument("");
  if (format == FileFormat::kNpy || format == FileFormat::kRaw) {
    answer = api.upload(file, file_format_name(format));
  } else {
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(field, m, params));
    TempFile npy;
    if (npy.path().empty()) return internal_error("cannot create a temporary file");
    LIZARD_RETURN_IF_ERROR(text_to_npy(file, format, field, width, npy.path()));
    answer = api.upload(npy.path(), "npy");
  }
  if (!answer.ok()) return answer.status().with_context("dataset field '" + field.name + "'");
  return answer->value("id", "");
}

// The version of the file this machine sees, as POST /datasets/probe takes it.
json identity_json(const FileIdentity& id) {
  return {{"device", id.device},
          {"inode", id.inode},
          {"size", id.size},
          {"mtime_ns", id.mtime_ns},
          {"ctime_ns", id.ctime_ns}};
}

// Whether the server and every worker read the file this machine sees at
// `path`; `why` says why not.  A server that cannot tell (an older one, or
// a path outside its data roots) counts as not.
bool read_everywhere(const ServerApi& api, const std::string& path, std::string* why) {
  auto seen = FileIdentity::of(path);
  if (!seen.ok()) {
    *why = seen.status().message();
    return false;
  }
  auto verdict = api.post("/datasets/probe", {{"path", path}, {"identity", identity_json(*seen)}},
                          /*timeout_s=*/30);
  if (!verdict.ok()) {
    *why = verdict.status().message();
    return false;
  }
  if (verdict->value("shared", false)) {
    *why = std::to_string(verdict->value("workers", json::array()).size()) + " worker(s)";
    return true;
  }
  *why = verdict->value("why", std::string("the server could not tell"));
  return false;
}

}  // namespace

Result<std::string> dataset_field_of(const Manifest& m, const DatasetArg& arg) {
  if (arg.field.empty()) {
    std::vector<std::string> inputs;
    for (const auto& f : m.dataset)
      if (f.input) inputs.push_back(f.name);
    if (inputs.size() == 1) return inputs.front();
    return invalid_argument("--dataset " + arg.file + ": the program has input fields " +
                            input_fields(m) + "; name one as --dataset NAME=FILE");
  }
  const FieldSpec* f = m.find_dataset(arg.field);
  if (!f || !f->input)
    return invalid_argument("--dataset " + arg.field + ": the program's input fields are " +
                            input_fields(m));
  return arg.field;
}

Result<StagedDatasets> stage_datasets(const ServerApi& api, const Manifest& m, const RunArgs& spec,
                                      FileDelivery delivery, std::ostream* log) {
  StagedDatasets out;
  auto fail = [&](const Status& s) {
    remove_uploads(api, out.uploads);
    return s;
  };
  std::optional<ParamValues> params;  // bound when a text file needs the row width
  for (const DatasetArg& arg : spec.datasets) {
    auto name = dataset_field_of(m, arg);
    if (!name.ok()) return fail(name.status());
    if (!arg.generator.empty()) {  // the workers run the manifest's generator
      out.dataset[*name] = arg.generate_source();
      continue;
    }
    if (!arg.upload.empty()) {  // `lizard upload`'s, kept on the server
      out.dataset[*name] = {{"upload", arg.upload}};
      continue;
    }
    auto format = resolve_file_format(arg.format, arg.file);
    if (!format.ok()) return fail(format.status().with_context("--dataset " + *name));
    std::error_code ec;
    const std::string path = fs::absolute(arg.file, ec).string();
    const json by_path = {{"path", path}, {"format", file_format_name(*format)}};
    if (delivery == FileDelivery::kPath) {
      out.dataset[*name] = by_path;
      continue;
    }
    if (!fs::is_regular_file(arg.file, ec))
      return fail(not_found("--dataset " + *name + ": cannot read " + arg.file));
    std::string why;
    if (delivery == FileDelivery::kChoose && read_everywhere(api, path, &why)) {
      if (log)
        *log << "sending " << arg.file << " by path for dataset field '" << *name
             << "': the server and its " << why << " read this same file\n";
      out.dataset[*name] = by_path;
      continue;
    }
    if (log && !why.empty()) *log << arg.file << " goes as an upload: " << why << "\n";
    if (!params) {
      auto bound = bind_params(m, spec.params);
      if (!bound.ok()) return fail(bound.status());
      params = std::move(bound).value();
    }
    auto id = upload_one(api, m, *params, *m.find_dataset(*name), arg.file, *format, log);
    if (!id.ok()) return fail(id.status());
    out.uploads.push_back(*id);
    out.dataset[*name] = {{"upload", *id}};
  }
  return out;
}

void remove_uploads(const ServerApi& api, const std::vector<std::string>& ids) {
  for (const auto& id : ids) (void)api.del("/datasets/" + id);
}

}  // namespace lizard
