#include "exec/process/executor_protocol.h"

#include "program/bundle.h"

namespace lizard {

const char* executor_op_name(ExecutorOp op) {
  switch (op) {
    case ExecutorOp::kInfo:
      return "info";
    case ExecutorOp::kBuild:
      return "build";
    case ExecutorOp::kBeginRun:
      return "begin_run";
    case ExecutorOp::kIterate:
      return "iterate";
    case ExecutorOp::kEndRun:
      return "end_run";
    case ExecutorOp::kRefreshFreeMemory:
      return "refresh_free_memory";
    case ExecutorOp::kRefreshLoad:
      return "refresh_load";
    case ExecutorOp::kProbe:
      return "probe";
    case ExecutorOp::kKeepFileRows:
      return "keep_file_rows";
    case ExecutorOp::kForgetKeptRows:
      return "forget_kept_rows";
    case ExecutorOp::kServeOwner:
      return "serve_owner";
  }
  return "unknown";
}

void write_program(ByteWriter* w, const ProgramImage& p) {
  w->bytes(p.hash);
  w->bytes(p.config);
  w->u64(p.sources.size());
  for (const auto& [name, text] : p.sources) {
    w->bytes(name);
    w->bytes(text);
  }
}

Result<ProgramImage> read_program(ByteReader* r) {
  const std::string hash = r->str();
  ProgramBundle b;
  b.config = r->str();
  const uint64_t n = r->u64();
  for (uint64_t i = 0; i < n && r->ok(); ++i) {
    std::string name = r->str();
    b.sources[name] = r->str();
  }
  LIZARD_RETURN_IF_ERROR(r->status("program"));
  LIZARD_ASSIGN_OR_RETURN(ProgramImage img, make_program_image(b));
  img.hash = hash;  // the worker's name for it
  return img;
}

void write_loans(ByteWriter* w, const std::vector<uint64_t>& ids) {
  w->u64(ids.size());
  for (uint64_t id : ids) w->u64(id);
}

std::vector<uint64_t> read_loans(ByteReader* r) {
  std::vector<uint64_t> ids;
  const uint64_t n = r->u64();
  for (uint64_t k = 0; k < n && r->ok(); ++k) ids.push_back(r->u64());
  return ids;
}

void write_params(ByteWriter* w, const ParamValues& p) {
  w->u64(p.values.size());
  for (const auto& v : p.values) {
    w->u8(static_cast<uint8_t>(v.type));
    w->i64(v.i);
    w->u64(v.u);
    w->f64(v.f);
  }
}

ParamValues read_params(ByteReader* r) {
  ParamValues p;
  const uint64_t n = r->u64();
  for (uint64_t k = 0; k < n && r->ok(); ++k) {
    ParamValue v;
    v.type = static_cast<DType>(r->u8());
    v.i = r->i64();
    v.u = r->u64();
    v.f = r->f64();
    p.values.push_back(v);
  }
  return p;
}

void write_file_rows(ByteWriter* w, const FileRows& f) {
  w->bytes(f.path);
  w->u64(f.identity.device);
  w->u64(f.identity.inode);
  w->u64(f.identity.size);
  w->i64(f.identity.mtime_ns);
  w->i64(f.identity.ctime_ns);
  w->u64(f.offset);
  w->u64(f.size);
}

FileRows read_file_rows_head(ByteReader* r) {
  FileRows f;
  f.path = r->str();
  f.identity.device = r->u64();
  f.identity.inode = r->u64();
  f.identity.size = r->u64();
  f.identity.mtime_ns = r->i64();
  f.identity.ctime_ns = r->i64();
  f.offset = r->u64();
  f.size = r->u64();
  return f;
}

void write_keys(ByteWriter* w, const std::vector<std::string>& keys) {
  w->u64(keys.size());
  for (const std::string& key : keys) w->bytes(key);
}

std::vector<std::string> read_keys(ByteReader* r) {
  std::vector<std::string> keys;
  const uint64_t n = r->u64();
  for (uint64_t k = 0; k < n && r->ok(); ++k) keys.push_back(r->str());
  return keys;
}

void write_partition_head(ByteWriter* w, const PartitionData& d,
                          const std::vector<FieldRowsHead>& heads) {
  w->bytes(encode_partition_spec(d));
  w->u64(heads.size());
  for (const FieldRowsHead& h : heads) {
    w->u8(static_cast<uint8_t>(h.how));
    w->bytes(h.key);
    w->u64(h.size);
    if (h.how == FieldRows::kFile) write_file_rows(w, h.file);
  }
}

Result<std::vector<FieldRowsHead>> read_partition_head(ByteReader* r, PartitionData* d) {
  LIZARD_ASSIGN_OR_RETURN(static_cast<PartitionSpec&>(*d), decode_partition_spec(r->bytes()));
  std::vector<FieldRowsHead> heads;
  const uint64_t n = r->u64();
  for (uint64_t k = 0; k < n && r->ok(); ++k) {
    FieldRowsHead h;
    const uint8_t how = r->u8();
    h.how = how == static_cast<uint8_t>(FieldRows::kKept)   ? FieldRows::kKept
            : how == static_cast<uint8_t>(FieldRows::kFile) ? FieldRows::kFile
                                                            : FieldRows::kSent;
    h.key = r->str();
    h.size = r->u64();
    if (h.how == FieldRows::kFile) h.file = read_file_rows_head(r);
    heads.push_back(std::move(h));
  }
  return heads;
}

void write_begin_run_reply(ByteWriter* w, const CompileStats& compile, bool rows_missing,
                           const std::vector<std::string>& kept) {
  w->f64(compile.compile_ms);
  w->u8(compile.cache_hit ? 1 : 0);
  w->u8(compile.quick_build ? 1 : 0);
  w->u8(rows_missing ? 1 : 0);
  write_keys(w, kept);
}

BeginRunReply read_begin_run_reply(ByteReader* r) {
  BeginRunReply out;
  out.compile.compile_ms = r->f64();
  out.compile.cache_hit = r->u8() != 0;
  out.compile.quick_build = r->u8() != 0;
  out.rows_missing = r->u8() != 0;
  out.kept = read_keys(r);
  return out;
}

void write_reply_head(ByteWriter* w, const Status& st, bool lost) {
  w->u8(static_cast<uint8_t>(st.code()));
  w->bytes(st.message());
  w->u8(lost ? 1 : 0);
}

Status read_reply_head(ByteReader* r, bool* lost) {
  const auto code = static_cast<Code>(r->u8());
  const std::string_view message = r->bytes();
  *lost = r->u8() != 0;
  LIZARD_RETURN_IF_ERROR(r->status("reply"));
  if (code == Code::kOk) return Status::Ok();
  return Status(code, std::string(message));
}

}  // namespace lizard
