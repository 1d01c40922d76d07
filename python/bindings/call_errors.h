// How a call's C++ errors reach Python, in one place for every entry point
// (pybind11's translator in module.cpp and the METH_FASTCALL fast path in
// sdpa_cache.cpp): a wrong call (session::CallError, DispatchError,
// spec::SpecError) is a ValueError naming the argument.
#pragma once

#include <exception>

namespace mfagen::python {

// Rethrows `error`; sets ValueError and returns true when it is a wrong
// call, returns false (no Python error set) for anything else.
bool set_call_error(std::exception_ptr error);

}  // namespace mfagen::python
