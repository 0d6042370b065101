#include "program/bundle.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/sha256.h"
#include "program/codegen.h"
#include "program/include_check.h"

namespace lizard {

using nlohmann::json;

json ProgramBundle::to_json() const {
  return json{{"config", config}, {"sources", sources}};
}

Result<ProgramBundle> ProgramBundle::from_json(const json& j) {
  if (!j.is_object()) return invalid_argument("the program bundle must be a JSON object");
  if (!j.contains("config") || !j["config"].is_string())
    return invalid_argument("the program bundle needs `config` (the text of config.yaml)");
  ProgramBundle b;
  b.config = j["config"].get<std::string>();
  if (j.contains("sources")) {
    if (!j["sources"].is_object())
      return invalid_argument("`sources` must map file names to their text");
    for (const auto& [name, text] : j["sources"].items()) {
      if (!text.is_string()) return invalid_argument("source '" + name + "' must be a string");
      b.sources[name] = text.get<std::string>();
    }
  }
  return b;
}

std::string bundle_checksum(const ProgramBundle& b) {
  Sha256 h;
  auto add = [&](const std::string& name, const std::string& text) {
    h.update(name);
    h.update(std::string(1, '\0'));
    h.update(std::to_string(text.size()));
    h.update(std::string(1, '\0'));
    h.update(text);
  };
  h.update(std::string("lizard-bundle-v1", 16));
  add("config.yaml", b.config);
  for (const auto& [name, text] : b.sources) add(name, text);  // std::map: sorted
  return h.hex_digest();
}

namespace {

namespace fs = std::filesystem;

// Reads `name` from the program directory `root` (canonical).  A file that
// resolves, through symlinks, to a place outside the directory is refused
// without being opened: its contents would travel to the server and could
// come back in a compile error.
// `dir` is the directory as the user named it, for messages.
Result<std::string> read_inside(const fs::path& root, const fs::path& dir,
                                const std::string& name) {
  const std::string shown = (dir / name).string();
  std::error_code ec;
  const fs::path real = fs::canonical(root / name, ec);
  if (ec) return not_found("cannot read " + shown);
  const fs::path inside = real.lexically_relative(root);
  if (inside.empty() || *inside.begin() == "..")
    return permission_denied(shown + " is a symlink that leads outside the program directory");
  std::ifstream in(real, std::ios::binary);
  if (!in) return not_found("cannot read " + shown);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Result<ProgramBundle> read_program_dir(const std::string& dir) {
  ProgramBundle b;
  std::error_code ec;
  if (!fs::is_directory(dir)) return not_found(dir + " is not a directory");
  const fs::path root = fs::canonical(dir, ec);
  if (ec) return not_found("cannot read " + dir + ": " + ec.message());
  const std::string config = (fs::path(dir) / "config.yaml").string();
  LIZARD_ASSIGN_OR_RETURN(b.config, read_inside(root, dir, "config.yaml"));
  LIZARD_ASSIGN_OR_RETURN(Manifest m, parse_manifest(b.config, config));
  for (const auto& f : m.source_files()) {
    auto source = read_inside(root, dir, f);
    if (!source.ok()) {
      const bool missing = source.status().code() == Code::kNotFound;
      return Status(source.status().code(), config + ": sources: " + f +
                                                (missing ? " is listed but " : ": ") +
                                                source.status().message());
    }
    b.sources[f] = std::move(source).value();
  }
  return b;
}

Result<ProgramImage> make_program_image(const ProgramBundle& b) {
  ProgramImage img;
  LIZARD_ASSIGN_OR_RETURN(img.manifest, parse_manifest(b.config, "config.yaml"));
  for (const auto& f : img.manifest.source_files())
    if (!b.sources.count(f))
      return invalid_argument("config.yaml: sources: '" + f + "' is listed but was not sent");
  for (const auto& [name, _] : b.sources) {
    bool listed = false;
    for (const auto& f : img.manifest.source_files()) listed = listed || f == name;
    if (!listed)
      return invalid_argument("'" + name + "' was sent but config.yaml does not list it");
  }
  LIZARD_RETURN_IF_ERROR(check_includes(b.sources));
  img.config = b.config;
  img.sources = b.sources;
  img.header = generate_program_header(img.manifest);
  img.hash = bundle_checksum(b);
  return img;
}

}  // namespace lizard
