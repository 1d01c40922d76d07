// The selftest's cache write cases (spec kind cache_append): a serving
// step's new keys and values, a prefill chunk crossing pages, a decode and a
// sequence with nothing new, written by the generated kernel into a cache
// that starts as a byte pattern; the whole cache must equal, byte for byte,
// the pattern with each new row stored by the reference
// (reference/cache_write.h).
#pragma once

#include <string>

#include "mfagen/backend.h"
#include "mfagen/library.h"
#include "selftest/case_result.h"
#include "selftest/selftest_case.h"

namespace mfagen::selftest {

// "B 3, Hkv 2, new rows 5/1/0 at cache lengths 9/0/4, pages of 4".
std::string describe_append_call(const SelftestCase& c);

// Runs the case's kernel (found by name) and adds a check per cache (k, v):
// ok when every byte is the reference's; max_abs_error counts the bytes that
// differ. `inject` flips one written byte of each before the comparison.
void run_append_case(const SelftestCase& c, const Library& library, Backend& backend, bool inject,
                     CaseResult& result);

}  // namespace mfagen::selftest
