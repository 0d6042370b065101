// The end of a run that completed its iterations: it is ended on its workers,
// the output fields it wants are gathered from them in row order, and the
// record gets its result (the state and aggregate as JSON) and its outputs
// (downloadable fields, the state's and aggregate's among them).
//
//   Status st = gather_outputs(run, ctx, &channel, wire_id, participants, sections);
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "program/layout.h"
#include "server/run_channel.h"
#include "server/run_record.h"
#include "server/run_sections.h"

namespace lizard {

// Ends the run on `participants` and gathers its outputs into its record.
Status gather_outputs(const std::shared_ptr<RunRecord>& run, const DriverContext& ctx,
                      RunChannel* channel, const std::string& wire_id,
                      const std::vector<std::string>& participants, const RunSections& s);

// A section's fields as JSON arrays and scalars (only its scalars when
// `scalars_only`).
nlohmann::json section_to_json(const SectionBuffer& s, const Manifest& m, const ParamValues& p,
                               bool scalars_only = false);

}  // namespace lizard
