#include "cli/program_loader.h"

#include <filesystem>

namespace lizard {

using nlohmann::json;

namespace {

bool is_hex(const std::string& s) {
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return !s.empty();
}

Result<ProgramRef> program_from_record(const json& j) {
  ProgramRef p;
  p.hash = j.value("hash", "");
  p.workers = j.value("workers", json::object());
  LIZARD_ASSIGN_OR_RETURN(p.manifest, parse_manifest(j.value("config", ""), "config.yaml"));
  return p;
}

// The checksum of the one registered program that `prefix` starts.
Result<std::string> full_checksum(const ServerApi& api, const std::string& prefix) {
  LIZARD_ASSIGN_OR_RETURN(json programs, api.get("/programs"));
  std::vector<std::string> matches;
  for (const json& p : programs) {
    const std::string hash = p.value("hash", "");
    if (hash.rfind(prefix, 0) == 0) matches.push_back(hash);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty())
    return not_found("no registered program has a checksum starting " + prefix +
                     " (`lizard run DIR` registers the program in DIR)");
  return invalid_argument("checksum prefix " + prefix + " matches " +
                          std::to_string(matches.size()) + " programs; give more digits");
}

}  // namespace

Result<ProgramRef> post_program(const ServerApi& api, const ProgramBundle& bundle, int timeout_s) {
  LIZARD_ASSIGN_OR_RETURN(HttpReply reply,
                          api.send("POST", "/programs", bundle.to_json().dump(), timeout_s));
  auto answer = json_answer(reply);
  if (!answer.ok())
    return Status(answer.status().code(), "the server refused the program (HTTP " +
                                              std::to_string(reply.status) + "):\n" +
                                              answer.status().message());
  ProgramRef p;
  p.hash = answer->value("hash", "");
  p.workers = answer->value("workers", json::object());
  LIZARD_ASSIGN_OR_RETURN(p.manifest, parse_manifest(bundle.config, "config.yaml"));
  return p;
}

Result<ProgramRef> resolve_program(const ServerApi& api, const std::string& program,
                                   int timeout_s) {
  std::error_code ec;
  if (std::filesystem::is_directory(program, ec)) {
    LIZARD_ASSIGN_OR_RETURN(ProgramBundle bundle, read_program_dir(program));
    return post_program(api, bundle, timeout_s);
  }
  if (!is_hex(program) || program.size() > 64)
    return invalid_argument("PROGRAM '" + program +
                            "' is neither a program directory nor a checksum");
  std::string hash = program;
  if (hash.size() < 64) {
    LIZARD_ASSIGN_OR_RETURN(hash, full_checksum(api, program));
  }
  auto record = api.get("/programs/" + hash);
  if (!record.ok() && record.status().code() == Code::kNotFound)
    return not_found("no program with checksum " + hash +
                     " is registered (`lizard run DIR` registers the program in DIR)");
  if (!record.ok()) return record.status();
  return program_from_record(record.value());
}

}  // namespace lizard
