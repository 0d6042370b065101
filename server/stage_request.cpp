#include "server/stage_request.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

#include "common/json_limits.h"
#include "dataset/dataset_file.h"
#include "dataset/input_file.h"
#include "dataset/npy.h"

namespace lizard {

using nlohmann::json;

namespace {

Status check_keys(const json& body) {
  static const std::set<std::string> known = {"path",  "program",   "format", "dtype",
                                              "width", "executors", "upload"};
  for (const auto& [k, _] : body.items())
    if (!known.count(k))
      return invalid_argument("unknown key '" + k +
                              "' in the stage request (expected path, program, format, dtype, "
                              "width or executors)");
  return Status::Ok();
}

// The optional `dtype` and `width` of the body into *r; `given` says which came.
Status read_shape(const json& body, StageRequest* r, bool* dtype_given, bool* width_given) {
  *dtype_given = body.contains("dtype");
  *width_given = body.contains("width");
  if (*dtype_given &&
      (!body["dtype"].is_string() || !parse_dtype(body["dtype"].get<std::string>(), &r->dtype)))
    return invalid_argument("`dtype` must be an element type such as \"float32\"");
  if (*width_given) {
    if (!body["width"].is_number_integer() || body["width"].get<int64_t>() < 1)
      return invalid_argument("`width` must be a positive integer (values per row)");
    r->width = body["width"].get<int64_t>();
  }
  return Status::Ok();
}

// An .npy file's dtype and row width, from its header, checked against the body's.
Status shape_from_npy(const InputFile& f, bool dtype_given, bool width_given, StageRequest* r) {
  auto h = read_npy_header(f);
  if (!h.ok()) return h.status().with_context(r->path);
  if (h->shape.empty()) return invalid_argument(r->path + ": a scalar .npy file has no rows");
  const int64_t width =
      std::accumulate(h->shape.begin() + 1, h->shape.end(), int64_t{1}, std::multiplies<int64_t>());
  if (dtype_given && h->dtype != r->dtype)
    return invalid_argument(r->path + " holds " + dtype_name(h->dtype) + " values, not " +
                            dtype_name(r->dtype));
  if (width_given && width != r->width)
    return invalid_argument(r->path + " has rows of " + std::to_string(width) + " values, not " +
                            std::to_string(r->width));
  r->dtype = h->dtype;
  r->width = std::max<int64_t>(1, width);
  return Status::Ok();
}

}  // namespace

json StageRequest::to_json() const {
  return {{"path", path},
          {"program", program},
          {"format", file_format_name(format)},
          {"dtype", dtype_name(dtype)},
          {"width", width},
          {"rows", rows}};
}

Result<StageRequest> parse_stage_request(const std::string& body_text, const DataRoots& roots) {
  LIZARD_ASSIGN_OR_RETURN(json body, parse_json_bounded(body_text));
  if (!body.is_object())
    return invalid_argument(
        "the stage request must be a JSON object such as "
        "{\"path\": \"/data/x.npy\"}");
  LIZARD_RETURN_IF_ERROR(check_keys(body));
  if (body.contains("upload"))
    return invalid_argument(
        "uploads cannot be staged: their rows reach the workers with a run; stage a file by "
        "`path`");
  if (!body.contains("path") || !body["path"].is_string() ||
      body["path"].get<std::string>().empty())
    return invalid_argument("give the file to stage as `path`");
  if (!body.contains("program") || !body["program"].is_string() ||
      body["program"].get<std::string>().empty())
    return invalid_argument(
        "name the program whose runs will read the rows as `program` (its hash): each "
        "program's kernels run in executor processes of their own, which keep rows for its "
        "runs alone");
  StageRequest r;
  r.path = body["path"].get<std::string>();
  r.program = body["program"].get<std::string>();
  if (body.contains("executors")) {
    if (!body["executors"].is_number_integer() || body["executors"].get<int64_t>() < 1)
      return invalid_argument("`executors` must be a positive integer");
    r.executors = body["executors"].get<int64_t>();
  }
  std::string fmt;
  if (body.contains("format")) {
    if (!body["format"].is_string()) return invalid_argument("`format` must be a string");
    fmt = body["format"].get<std::string>();
  }
  LIZARD_ASSIGN_OR_RETURN(r.format, resolve_file_format(fmt, r.path));
  if (r.format != FileFormat::kNpy && r.format != FileFormat::kRaw)
    return invalid_argument(std::string("only npy and raw files can be staged (") + r.path +
                            " is " + file_format_name(r.format) +
                            "); runs read text formats afresh each time");
  bool dtype_given = false, width_given = false;
  LIZARD_RETURN_IF_ERROR(read_shape(body, &r, &dtype_given, &width_given));
  if (r.format == FileFormat::kRaw && (!dtype_given || !width_given))
    return invalid_argument("a raw file needs `dtype` and `width` (values per row)");
  // Within the data roots, opened without blocking, a regular file only.
  LIZARD_ASSIGN_OR_RETURN(auto at, roots.locate(r.path));
  LIZARD_ASSIGN_OR_RETURN(InputFile file, roots.open(at));
  if (r.format == FileFormat::kNpy)
    LIZARD_RETURN_IF_ERROR(shape_from_npy(file, dtype_given, width_given, &r));
  LIZARD_ASSIGN_OR_RETURN(r.rows, count_rows(&file, r.format, r.dtype, r.width));
  return r;
}

}  // namespace lizard
