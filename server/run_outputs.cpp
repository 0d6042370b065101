#include "server/run_outputs.h"

#include <spdlog/spdlog.h>

#include <map>

#include "common/clock.h"
#include "dataset/json_values.h"
#include "protocol/messages.h"

namespace lizard {

using nlohmann::json;

json section_to_json(const SectionBuffer& s, const Manifest& m, const ParamValues& p,
                     bool scalars_only) {
  json out = json::object();
  for (const auto& slot : s.slots) {
    if (scalars_only && slot.count != 1) continue;
    auto dims = field_dims(*slot.spec, m, p);
    out[slot.spec->name] = values_to_json(
        s.data(slot), slot.spec->type, dims.ok() ? dims.value() : std::vector<int64_t>{slot.count});
  }
  return out;
}

Status gather_outputs(const std::shared_ptr<RunRecord>& run, const DriverContext& ctx,
                      RunChannel* channel, const std::string& wire_id,
                      const std::vector<std::string>& participants, const RunSections& s) {
  const Manifest& m = run->program->image.manifest;
  const RunRequest& req = run->request;
  std::vector<std::string> wanted;
  for (size_t k = 0; k < m.dataset.size(); ++k)
    if (req.want_output[k]) wanted.push_back(m.dataset[k].name);
  channel->end_on_workers(wire_id, participants, !wanted.empty(), wanted);
  std::map<std::string, OutputField> outputs;
  const auto t_end = SteadyClock::now();
  uint64_t output_bytes = 0;
  if (!wanted.empty()) {
    channel->expect_answers("run_outputs", 0, channel->load_deadline_s(req.rows), participants);
    auto outs = channel->collect(wire_id, MessageType::kRunOutputs, participants);
    if (!outs.ok()) return outs.status().with_context("gathering outputs");
    for (size_t k = 0; k < m.dataset.size(); ++k) {
      const FieldSpec& f = m.dataset[k];
      if (!req.want_output[k]) continue;
      std::string joined;
      LIZARD_ASSIGN_OR_RETURN(auto dims, field_dims(f, m, req.params, req.rows));
      for (const auto& id : participants) {  // plan order == row order
        Message& msg = outs->at(id);
        auto parsed = RunOutputsMsg::parse(msg.header);
        if (!parsed.ok()) return parsed.status().with_context("worker " + id);
        size_t off = 0;
        for (const auto& part : parsed->fields) {
          if (off + part.bytes > msg.payload.size())
            return internal_error("worker " + id + " sent fewer output bytes than it announced");
          const bool whole = participants.size() == 1 && parsed->fields.size() == 1 &&
                             part.bytes == msg.payload.size();
          if (part.name == f.name && whole)
            joined = std::move(msg.payload);  // one worker's one field: no copy
          else if (part.name == f.name)
            joined.append(msg.payload, off, part.bytes);
          off += part.bytes;
        }
      }
      output_bytes += joined.size();
      outputs[f.name] = OutputField(f.type, std::move(dims), std::move(joined));
    }
  }
  auto add_section = [&](const SectionBuffer& sec) {
    for (const auto& slot : sec.slots) {
      auto dims = field_dims(*slot.spec, m, req.params);
      outputs.emplace(
          slot.spec->name,
          OutputField{slot.spec->type, dims.ok() ? dims.value() : std::vector<int64_t>{},
                      std::string(reinterpret_cast<const char*>(sec.data(slot)), slot.bytes)});
    }
  };
  add_section(s.state);
  add_section(s.agg);
  json result = {{"state", section_to_json(s.state, m, req.params)},
                 {"aggregate", section_to_json(s.agg, m, req.params)}};
  const double outputs_ms = ms_since(t_end);
  if (!wanted.empty())
    spdlog::debug("{}: {} bytes of output fields gathered in {:.3f} ms", run->id, output_bytes,
                  outputs_ms);
  ctx.book->update(run, [&](RunRecord& r) {
    r.result = std::move(result);
    r.outputs = std::move(outputs);
    if (!wanted.empty()) {
      r.phases.outputs_ms = outputs_ms;
      r.phases.output_bytes = output_bytes;
    }
  });
  return Status::Ok();
}

}  // namespace lizard
