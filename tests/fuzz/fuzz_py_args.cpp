// libFuzzer target for the Python binding's argument conversion (python/src): the extension
// module built in the fuzz build (with the fuzzer's coverage and AddressSanitizer, whose runtime
// this program holds) is imported by an embedded interpreter. Each input goes to
// tests/fuzz/py_args_driver.py's fuzz_one, which reads it as a call into attograd's Python front
// with arguments built from the bytes; the call must give a result or one of the exceptions torch
// raises for bad input. A crash, a sanitizer report, or anything else escaping fuzz_one is a
// finding. Built by `make fuzz` beside fuzz_safetensors and fuzz_config_toml; seeds in
// tests/fuzz/corpus_py, findings kept in tests/fuzz/regressions_py (python/tests/
// test_harden_fuzz_corpus.py replays both on every test run).
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace {
PyObject* g_fuzz_one = nullptr;

// The package as the fuzz build lays it out (build-fuzz/python/attograd), the driver beside this
// file, and the NumPy of the venv that configured the build.
const char* kBootstrap = R"(
import site, sys
site.addsitedir(SITE_PACKAGES)
sys.path[:0] = [PACKAGE_DIR, DRIVER_DIR]
import py_args_driver
)";

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_py_args: %s\n", what);
  PyErr_Print();
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Py_InitializeEx(0);  // no Python signal handlers: libFuzzer keeps its own
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  for (const auto& [name, value] : {std::pair{"SITE_PACKAGES", AG_FUZZ_SITE_PACKAGES},
                                    std::pair{"PACKAGE_DIR", AG_FUZZ_PACKAGE_DIR}, std::pair{"DRIVER_DIR", AG_FUZZ_DRIVER_DIR}}) {
    PyObject* v = PyUnicode_FromString(value);
    PyDict_SetItemString(globals, name, v);
    Py_DECREF(v);
  }
  PyObject* r = PyRun_String(kBootstrap, Py_file_input, globals, globals);
  if (!r) fail("cannot import attograd and the driver");
  Py_DECREF(r);
  PyObject* driver = PyImport_ImportModule("py_args_driver");
  if (!driver) fail("no driver");
  g_fuzz_one = PyObject_GetAttrString(driver, "fuzz_one");
  if (!g_fuzz_one) fail("no fuzz_one in the driver");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  PyObject* bytes = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(data), static_cast<Py_ssize_t>(size));
  PyObject* r = PyObject_CallOneArg(g_fuzz_one, bytes);
  Py_DECREF(bytes);
  if (!r) {
    PyErr_Print();  // the driver let out what the binding should never raise
    __builtin_trap();
  }
  Py_DECREF(r);
  return 0;
}
