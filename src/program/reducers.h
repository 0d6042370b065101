// Reducers: identities and folding of aggregate fields for the built-in
// reducers (sum, min, max, prod).  `custom` fields are folded by the
// program's `aggregate` hook; their identity is zero.
//
//   set_identity(&agg);               before each iteration
//   fold_into(&running, partial);     on a worker across GPUs, then on the server
#pragma once

#include "program/layout.h"

namespace lizard {

// Fills every field of `section` with its reducer's identity.
void set_identity(SectionBuffer* section);
// Folds `partial` into `running` field by field (built-in reducers only;
// custom fields are left untouched).  Both must come from the same manifest and params.
void fold_into(SectionBuffer* running, const SectionBuffer& partial);

}  // namespace lizard
