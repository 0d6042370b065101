#include "dataset/file_format.h"

#include <algorithm>
#include <cctype>

namespace lizard {
namespace {

struct FormatName {
  FileFormat format;
  const char* name;
};
constexpr FormatName kFormats[] = {
    {FileFormat::kNpy, "npy"},   {FileFormat::kRaw, "raw"},       {FileFormat::kCsv, "csv"},
    {FileFormat::kText, "text"}, {FileFormat::kLizard, "lizard"},
};

std::string lower_extension(const std::string& path) {
  size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace

const char* file_format_name(FileFormat f) {
  for (const auto& n : kFormats)
    if (n.format == f) return n.name;
  return "raw";
}

Result<FileFormat> parse_file_format(const std::string& name) {
  for (const auto& n : kFormats)
    if (name == n.name) return n.format;
  std::string choices;
  for (const auto& n : kFormats) choices += std::string(choices.empty() ? "" : ", ") + n.name;
  return invalid_argument("unknown file format '" + name + "' (expected one of: " + choices + ")");
}

FileFormat file_format_from_path(const std::string& path) {
  std::string ext = lower_extension(path);
  if (ext == ".npy") return FileFormat::kNpy;
  if (ext == ".csv") return FileFormat::kCsv;
  if (ext == ".txt") return FileFormat::kText;
  return FileFormat::kRaw;
}

Result<FileFormat> resolve_file_format(const std::string& name, const std::string& path) {
  if (name.empty()) return file_format_from_path(path);
  return parse_file_format(name);
}

}  // namespace lizard
