// FileFormat: how a dataset field is stored in a file named by a run request
// ({"path": ..., "format": ...}).
//
//   Result<FileFormat> f = parse_file_format("csv");
//   FileFormat g = file_format_from_path("/data/points.npy");  // kNpy
//
// npy:    a NumPy .npy file of the field's dtype, C order.
// raw:    little-endian values of the field's dtype, row-major, no header.
// csv:    one row per line, values separated by commas.
// text:   one row per line, values separated by spaces or tabs.
// lizard: the seed platform's text format: a first line with the row count,
//         then "index v1 ... vD" per line (the index is dropped).
#pragma once

#include <string>

#include "common/status.h"

namespace lizard {

enum class FileFormat { kNpy, kRaw, kCsv, kText, kLizard };

const char* file_format_name(FileFormat f);  // "npy"

// Parses a format name; an unknown name is kInvalidArgument listing the choices.
Result<FileFormat> parse_file_format(const std::string& name);

// The format implied by the path's extension: .npy, .csv, .txt (text), anything else raw.
FileFormat file_format_from_path(const std::string& path);

// `name` when it is not empty, else the format implied by `path`.
Result<FileFormat> resolve_file_format(const std::string& name, const std::string& path);

}  // namespace lizard
