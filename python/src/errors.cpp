// C++ errors as the Python exceptions torch raises for them, with the C++ message unchanged:
// IndexError, TypeError and ValueError for attograd's errors of those kinds (autograd/errors.h)
// and std::out_of_range; RuntimeError for every other bad input (std::invalid_argument,
// std::logic_error, std::runtime_error), as torch raises RuntimeError for shape and dtype
// mismatches; MemoryError for std::bad_alloc.
#include <new>
#include <stdexcept>

#include "autograd/errors.h"
#include "common.h"

namespace agpy {

void bind_errors(nb::module_&) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const nb::builtin_exception&) {
      throw;  // nanobind's own (nb::type_error, ...): its translator sets them
    } catch (const ag::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const ag::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const ag::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::out_of_range& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const std::bad_alloc&) {
      PyErr_NoMemory();
    } catch (const std::logic_error& e) {  // std::invalid_argument among them
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const std::runtime_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace agpy
