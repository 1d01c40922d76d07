#include "call_errors.h"

#include <Python.h>

#include "mfagen/forward_dispatch.h"
#include "session/call_error.h"
#include "spec/kernel_spec.h"

namespace mfagen::python {

bool set_call_error(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const session::CallError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const DispatchError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const spec::SpecError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (...) {
    return false;
  }
  return true;
}

}  // namespace mfagen::python
