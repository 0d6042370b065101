// RunSession's dataset fields read from files: each executor's rows are
// located under its lock just before its begin_run, in the version of the
// file the run pinned (a file that changed since fails the run), unless the
// executor keeps them from an earlier run under the file's identity and the
// rows' range (dataset/file_rows_key.h): they are then named by key and not
// read at all.
// An executor process reads the byte range of an .npy or raw file itself
// (exec/file_rows.h) and keeps it under that key; text formats, and
// executors inside the worker, get rows the worker read.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "client/keyed_file_rows.h"
#include "client/run_session.h"
#include "dataset/file_rows_key.h"
#include "exec/file_rows.h"

namespace lizard {

Status RunSession::add_file_field(size_t k, const FieldSource& src, int64_t width,
                                  const std::vector<PinnedFile>& pinned) {
  const FieldSpec& f = program_->manifest.dataset[k];
  const std::string what = "dataset field '" + f.name + "'";
  LIZARD_RETURN_IF_ERROR(
      server_roots_.locate(src.path, ctx_.data_roots).status().with_context(what));
  LIZARD_ASSIGN_OR_RETURN(FileFormat format, parse_file_format(src.format));
  FileField ff{k, src.path, format, f.type, width, std::nullopt, ""};
  for (const PinnedFile& pin : pinned)
    if (pin.field == f.name && pin.path == src.path) ff.pinned = pin;
  file_fields_.push_back(std::move(ff));
  return Status::Ok();
}

// The server names its copy of an upload, and the version of it the run
// pins; a worker on the same host (or one that mounts the server's state
// directory) that sees that version and may read it takes the rows from
// there, as from a file the run named, rather than have them sent.  Within
// the worker's own --data-root directories only: the copy lies outside the
// server's, which confine the paths of requests, not the server's own files.
Status RunSession::add_upload_copy(size_t k, const FieldSource& src, int64_t width,
                                   const std::vector<PinnedFile>& pinned) {
  const FieldSpec& f = program_->manifest.dataset[k];
  const PinnedFile* pin = nullptr;
  for (const PinnedFile& p : pinned)
    if (p.field == f.name && p.path == src.path && !src.path.empty()) pin = &p;
  if (!pin) return not_found("the server named no copy of the upload");
  auto format = parse_file_format(src.format);
  if (!format.ok() || (*format != FileFormat::kNpy && *format != FileFormat::kRaw))
    return not_found("the server's copy is no .npy or raw file");
  if (!DataRoots().locate(src.path, ctx_.data_roots).ok())
    return not_found("the server's copy lies outside this worker's data roots");
  const int fd = ::open(src.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found("this worker cannot read the server's copy");
  struct ::stat st {};
  const bool seen = ::fstat(fd, &st) == 0;
  ::close(fd);
  if (!seen || !check_pinned(*pin, FileIdentity::of(st)).ok())
    return not_found("this worker sees another file at the path of the server's copy");
  file_fields_.push_back({k, src.path, *format, f.type, width, *pin, src.upload});
  return Status::Ok();
}

// Rows an executor keeps, noted as of their file; an upload's copy as of the
// upload, so that deleting the upload drops them.
void RunSession::note_kept(const FileField& ff, const FileRowsKey& key) {
  if (!ctx_.kept_catalog) return;
  if (ff.upload.empty()) return ctx_.kept_catalog->note(key);
  ctx_.kept_catalog->note({key.key(),
                           "upload " + ff.upload + " rows " + std::to_string(key.first_row) + ".." +
                               std::to_string(key.first_row + key.rows),
                           key.bytes(), ff.upload, key.first_row, key.rows});
}

Status RunSession::load_file_rows(size_t i, PartitionData* d) {
  if (file_fields_.empty()) return Status::Ok();
  OwnerProcessExecutor* process = (*ctx_.executors)[executors_[i]]->process;
  std::vector<std::string> kept;
  if (process) {  // only executor processes keep rows between runs, each for its program's
    kept = process->kept_rows_for(OwnerProcessExecutor::owner_of(program_->hash));
    if (d->shared.size() < d->fields.size()) d->shared.resize(d->fields.size());
  }
  for (const FileField& ff : file_fields_) {
    const std::string what = "dataset field '" + program_->manifest.dataset[ff.k].name + "'";
    // Keyed by the identity of what was opened: whoever reads the rows checks it.
    const DataRoots unconfined;
    auto keyed = open_file_rows_key(ff.upload.empty() ? server_roots_ : unconfined, ctx_.data_roots,
                                    ff.path, ff.format, ff.dtype, ff.width, d->first_row, d->rows);
    if (!keyed.ok()) return keyed.status().with_context(what);
    FileRowsKey key = std::move(keyed).value();
    // The version the run read first, or none: never another, kept or read.
    if (ff.pinned) {
      LIZARD_RETURN_IF_ERROR(check_pinned(*ff.pinned, key.file).with_context(what));
      // Kept rows of other bytes under the same identity have another key.
      key.content_sha256 = ff.pinned->content_sha256;
    }
    const std::string name = key.key();
    const uint64_t bytes = key.bytes();
    if (bytes == 0) continue;
    if (std::find(kept.begin(), kept.end(), name) != kept.end()) {
      d->shared[ff.k] = {nullptr, 0, bytes, name};
      file_bytes_kept_ += bytes;
      continue;
    }
    if (process && (ff.format == FileFormat::kNpy || ff.format == FileFormat::kRaw)) {
      // One byte range of the file: the executor process reads it itself
      // and keeps it under the key, which names the identity it checks.
      auto located = locate_keyed_rows(key, "run again");
      if (!located.ok()) return located.status().with_context(what);
      if (d->file_rows.size() < d->fields.size()) d->file_rows.resize(d->fields.size());
      d->file_rows[ff.k] = std::move(located).value();
      d->shared[ff.k] = {nullptr, 0, bytes, name};
      file_bytes_read_ += bytes;
      note_kept(ff, key);
      continue;
    }
    auto rows = std::make_shared<std::vector<uint8_t>>(bytes);
    LIZARD_RETURN_IF_ERROR(read_rows_unchanged(key, rows->data()).with_context(what));
    file_bytes_read_ += bytes;
    if (!process) {
      d->fields[ff.k] = std::move(*rows);
      continue;
    }
    d->shared[ff.k] = {std::move(rows), 0, bytes, name};
    note_kept(ff, key);
  }
  return Status::Ok();
}

}  // namespace lizard
