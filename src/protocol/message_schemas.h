// The fields of every message with a JSON header, each listed once: its key,
// member, whether it is required, and what it means.  The encoders and
// decoders of protocol/messages.h and staging_messages.h, and the reference
// page docs/wire-protocol.md (protocol/wire_reference.h), are made from these
// tables; protocol/message_schema.h has the mechanism.
//
//   for_each_message_schema([](auto schema) { using S = typename decltype(schema)::type; ... });
//
// A field is required where its absence could not be told from a value: ids,
// and `ok` wherever a missing one would read as success.  Adding an optional
// field keeps the wire compatible; the reference page is then written anew
// (wire_reference.h says how).
#pragma once

#include "protocol/message_schemas_server.h"
#include "protocol/message_schemas_worker.h"

namespace lizard {

template <typename T>
struct SchemaTag {
  using type = T;
};

// Calls `f(SchemaTag<WireSchema<M>>{})` for each message M with a JSON
// header, in the order of their type numbers.
template <typename F>
void for_each_message_schema(F&& f) {
  f(SchemaTag<WireSchema<HelloMsg>>{});
  f(SchemaTag<WireSchema<WelcomeMsg>>{});
  f(SchemaTag<WireSchema<ProgramMsg>>{});
  f(SchemaTag<WireSchema<ProgramStatusMsg>>{});
  f(SchemaTag<WireSchema<RunStartMsg>>{});
  f(SchemaTag<WireSchema<RunReadyMsg>>{});
  f(SchemaTag<WireSchema<RunEndMsg>>{});
  f(SchemaTag<WireSchema<RunOutputsMsg>>{});
  f(SchemaTag<WireSchema<DataChunkMsg>>{});
  f(SchemaTag<WireSchema<ProgressMsg>>{});
  f(SchemaTag<WireSchema<ResourcesMsg>>{});
  f(SchemaTag<WireSchema<RunAbortMsg>>{});
  f(SchemaTag<WireSchema<LoopMsg>>{});
  f(SchemaTag<WireSchema<StageRowsMsg>>{});
  f(SchemaTag<WireSchema<RowsStagedMsg>>{});
  f(SchemaTag<WireSchema<DropRowsMsg>>{});
  f(SchemaTag<WireSchema<BuildAheadMsg>>{});
  f(SchemaTag<WireSchema<LogChunkMsg>>{});
  f(SchemaTag<WireSchema<ProbeFileMsg>>{});
  f(SchemaTag<WireSchema<FileProbedMsg>>{});
  f(SchemaTag<WireSchema<BuildOfferMsg>>{});
  f(SchemaTag<WireSchema<BuildFetchMsg>>{});
  f(SchemaTag<WireSchema<BuildFetchedMsg>>{});
  f(SchemaTag<WireSchema<ProgramRemovedMsg>>{});
}

// The same for the objects inside headers.
template <typename F>
void for_each_object_schema(F&& f) {
  f(SchemaTag<WireSchema<CpuInfo>>{});
  f(SchemaTag<WireSchema<PartSpec>>{});
  f(SchemaTag<WireSchema<FoldPlace>>{});
  f(SchemaTag<WireSchema<OutputPart>>{});
  f(SchemaTag<StagePartSchema>{});
  f(SchemaTag<StagedPartSchema>{});
  f(SchemaTag<WireSchema<PinnedFile>>{});
  f(SchemaTag<WireSchema<FileIdentity>>{});
  f(SchemaTag<WireSchema<LogLine>>{});
}

}  // namespace lizard
