// The reference page of the worker wire protocol, docs/wire-protocol.md:
// every message type, and every field of every header, written from the
// message schemas (protocol/message_schemas.h) and the packed layouts
// (protocol/iteration_messages.h), never by hand.  The unit test
// WireReference.PageIsCurrent fails when the page differs; it writes the page
// anew when run with LIZARD_WRITE_DOCS=1:
//
//   LIZARD_WRITE_DOCS=1 build/tests/lizard_unit_tests --gtest_filter='WireReference.*'
#pragma once

#include <string>

namespace lizard {

std::string wire_reference_markdown();

}  // namespace lizard
