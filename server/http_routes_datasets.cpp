// HttpRoutes' dataset routes: uploads (stored with their owner and whom they
// are shared with), the listing of uploads and kept rows, removal (an
// upload's kept rows go with it), staging rows onto executors before a run,
// dropping the kept rows of a source, and probing whether every worker reads
// the same file at a path.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "common/json_limits.h"
#include "dataset/data_roots.h"
#include "protocol/run_spec_schema.h"
#include "server/dataset_store.h"
#include "server/dataset_views.h"
#include "server/file_visibility.h"
#include "server/http_routes.h"
#include "server/program_registry.h"
#include "server/row_stager.h"
#include "server/stage_request.h"

namespace lizard {

using nlohmann::json;

// A user sees their own uploads; admins and readers everyone's.
void HttpRoutes::get_datasets(Call& c, Responder& r) {
  json view = datasets_view(*s_.datasets, *s_.workers, c.query["digest"]);
  if (!c.caller.sees_everyones_data()) {
    json own = json::array();
    for (json& u : view["uploads"])
      if (!upload_refusal(c.caller, u)) own.push_back(std::move(u));
    view["uploads"] = std::move(own);
  }
  r(json_response(200, view));
}

void HttpRoutes::delete_dataset(Call& c, Responder& r) {
  const std::string& id = c.path["id"];
  if (auto a = s_.datasets->access_of(id); a.ok())
    if (auto no = steer_refusal(c.caller, a->owner, "upload " + id, "delete"))
      return r(std::move(*no));
  Status st = s_.datasets->remove(id);
  if (!st.ok()) return r(error_response(st));
  json out = {{"deleted", id}};
  if (s_.stager) out["workers_told"] = s_.stager->drop(id);  // its rows the workers keep
  r(json_response(200, out));
}

void HttpRoutes::post_stage(Call& c, Responder& r) {
  if (!s_.stager) return r(json_response(404, {{"error", "this server does not stage rows"}}));
  auto body = std::make_shared<std::string>(std::move(c.req.body));
  // Reads the file and waits for the workers: off the io thread.
  s_.offload([this, body, respond = std::move(r)]() mutable {
    answer_guarded(std::move(respond), [&](Responder answer) {
      static const DataRoots kAnywhere;
      auto req = parse_stage_request(*body, s_.data_roots ? *s_.data_roots : kAnywhere);
      if (!req.ok()) return answer(error_response(req.status()));
      if (!s_.programs || !s_.programs->find(req->program))
        return answer(json_response(404, {{"error", "no program " + req->program +
                                                        " is registered: register it "
                                                        "before staging rows for its runs"}}));
      auto staged = s_.stager->stage(*req);
      if (!staged.ok()) {
        spdlog::warn("staging {} failed: {}", req->path, staged.status().message());
        return answer(error_response(staged.status()));
      }
      spdlog::info("staged {} ({} rows, {} bytes) onto {} executor(s)", req->path, req->rows,
                   staged->value("bytes", uint64_t{0}), (*staged)["executors"].size());
      answer(json_response(200, *staged));
    });
  });
}

void HttpRoutes::post_drop(Call& c, Responder& r) {
  if (!s_.stager) return r(json_response(404, {{"error", "this server does not drop rows"}}));
  auto body = parse_json_bounded(c.req.body);
  if (!body.ok()) return r(error_response(body.status()));
  if (!body->is_object() || !body->contains("source") || !(*body)["source"].is_string() ||
      (*body)["source"].get<std::string>().empty() || body->size() != 1)
    return r(json_response(400, {{"error",
                                  "the body must be {\"source\": PATH or UPLOAD_ID}: "
                                  "the path as runs named it, or an upload's id"}}));
  const std::string source = (*body)["source"].get<std::string>();
  const size_t told = s_.stager->drop(source);
  spdlog::info("audit: {} dropped the kept rows of {} ({} worker(s) told)", c.caller.name, source,
               told);
  r(json_response(200, {{"source", source}, {"workers_told", told}}));
}

namespace {

// {"path": PATH} or {"path": PATH, "identity": {device, inode, size,
// mtime_ns, ctime_ns}}: the file, and the version the client sees.
Status parse_probe(const json& body, std::string* path, std::optional<FileIdentity>* seen) {
  const char* kShape =
      "the body must be {\"path\": PATH} or {\"path\": PATH, \"identity\": {\"device\", "
      "\"inode\", \"size\", \"mtime_ns\", \"ctime_ns\"}}: the version the client sees";
  if (!body.is_object() || !body.contains("path") || !body["path"].is_string() ||
      body["path"].get<std::string>().empty())
    return invalid_argument(kShape);
  for (const auto& [k, _] : body.items())
    if (k != "path" && k != "identity")
      return invalid_argument("unknown key '" + k + "'; " + kShape);
  *path = body["path"].get<std::string>();
  if (!body.contains("identity")) return Status::Ok();
  FileIdentity id;
  if (std::string why =
          wire_schema::ObjectOf<WireSchema<FileIdentity>>::read(body["identity"], &id);
      !why.empty())
    return invalid_argument("identity" + why + "; " + kShape);
  *seen = id;
  return Status::Ok();
}

}  // namespace

void HttpRoutes::post_probe(Call& c, Responder& r) {
  if (!s_.visibility) return r(json_response(404, {{"error", "this server does not probe files"}}));
  auto body = parse_json_bounded(c.req.body);
  if (!body.ok()) return r(error_response(body.status()));
  std::string path;
  std::optional<FileIdentity> seen;
  if (Status st = parse_probe(*body, &path, &seen); !st.ok()) return r(error_response(st));
  // Opens the file and waits for the workers: off the io thread.
  s_.offload([this, path, seen, respond = std::move(r)]() mutable {
    answer_guarded(std::move(respond), [&](Responder answer) {
      auto verdict = s_.visibility->probe(path, seen);
      if (!verdict.ok()) return answer(error_response(verdict.status()));
      answer(json_response(200, *verdict));
    });
  });
}

namespace {

// ?share=bob,carol: the users an upload is shared with.
std::vector<std::string> share_list(const std::string& names) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= names.size()) {
    const size_t comma = std::min(names.find(',', from), names.size());
    if (comma > from) out.push_back(names.substr(from, comma - from));
    from = comma + 1;
  }
  return out;
}

}  // namespace

void HttpRoutes::post_dataset(Call& c, Responder& r) {
  std::vector<std::string> share = share_list(c.query["share"]);
  for (const std::string& name : share)
    if (!valid_share_name(name)) {
      std::error_code ec;
      std::filesystem::remove(c.req.body_file, ec);  // nothing of it is kept
      return r(json_response(
          400, {{"error", "share: '" + name + "' is no user's name (share=NAME,NAME or *)"}}));
    }
  if (!c.req.body_status.ok()) {  // the body met a full disk: its file is gone
    spdlog::warn("upload refused: {}", c.req.body_status.message());
    return r(error_response(c.req.body_status));
  }
  if (c.req.body_file.empty())
    return r(json_response(400, {{"error", "POST /datasets takes the file as the request body"}}));
  // Reads the file's header and writes its description durably: off the io thread.
  s_.offload([this, req = std::move(c.req), format = c.query["format"], caller = c.caller.name,
              share = std::move(share), respond = std::move(r)]() mutable {
    answer_guarded(std::move(respond), [&](Responder answer) {
      const std::string id = std::filesystem::path(req.body_file).stem().string();
      auto meta = s_.datasets->commit(id, req.body_file, format, req.body_digest, caller, share);
      if (!meta.ok()) return answer(error_response(meta.status()));
      json out = std::move(meta).value();
      const double bytes = static_cast<double>(out.value("bytes", uint64_t{0}));
      const double seconds = req.body_seconds;
      out["receive_ms"] = seconds * 1000;
      out["receive_bytes_per_s"] = seconds > 0 ? bytes / seconds : 0.0;
      spdlog::info("stored dataset {} ({} bytes in {:.2f} s)", id, bytes, seconds);
      answer(json_response(201, out));
    });
  });
}

}  // namespace lizard
