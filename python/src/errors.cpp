// C++ errors as the Python exceptions torch raises for them, with the C++ message unchanged:
// IndexError, TypeError and ValueError for attograd's errors of those kinds (autograd/errors.h)
// and std::out_of_range; RuntimeError for every other bad input (std::invalid_argument,
// std::logic_error, std::runtime_error), as torch raises RuntimeError for shape and dtype
// mismatches; attograd.OutOfMemoryError for a tensor's memory that could not be had (a RuntimeError,
// as torch raises for a failed CPU allocation, and a MemoryError, as Python raises), MemoryError
// for any other std::bad_alloc; TypeError for a std::bad_cast (a value nanobind could not convert).
#include <new>
#include <typeinfo>
#include <stdexcept>

#include "autograd/errors.h"
#include "common.h"

namespace agpy {

namespace {
PyObject* g_out_of_memory = nullptr;  // attograd.OutOfMemoryError (the module holds a reference)
}

void bind_errors(nb::module_& m) {
  g_out_of_memory = PyErr_NewExceptionWithDoc(
      "attograd.OutOfMemoryError",
      "A tensor's memory could not be had (more than the machine, its cgroup or ulimit -v allows): "
      "a RuntimeError, as torch raises for a failed CPU allocation, and a MemoryError.",
      nb::make_tuple(nb::handle(PyExc_RuntimeError), nb::handle(PyExc_MemoryError)).ptr(), nullptr);
  if (!g_out_of_memory) throw nb::python_error();
  m.attr("OutOfMemoryError") = nb::handle(g_out_of_memory);
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
    } catch (const ag::OutOfMemoryError& e) {
      PyErr_SetString(g_out_of_memory, e.what());
    } catch (const std::bad_alloc&) {
      PyErr_NoMemory();
    } catch (const std::bad_cast&) {
      PyErr_SetString(PyExc_TypeError, "an argument could not be converted to the type this function takes");
    } catch (const std::logic_error& e) {  // std::invalid_argument among them
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const std::runtime_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace agpy
