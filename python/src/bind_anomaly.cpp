// Anomaly mode from Python (autograd.detect_anomaly): the guard, and the Python frames each node
// keeps, so that a NaN found in backward names the user's Python line that made the op, as torch
// prints the forward call's traceback. Frames inside the attograd package itself are passed over.
#include <memory>

#include "autograd/anomaly.h"
#include "common.h"

namespace agpy {

namespace {

std::string g_package_dir;  // python/attograd as installed; set once at import

// The running Python frames, innermost first, "  FILE:LINE in FUNCTION" each (anomaly.h's form).
std::string python_frames(int max_frames) {
  if (!Py_IsInitialized()) return "";
  nb::gil_scoped_acquire gil;  // record() may run with the GIL released (a large matmul)
  std::string out;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  for (int shown = 0; frame && shown < max_frames;) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const char* function = PyUnicode_AsUTF8(code->co_name);
    const std::string path = file ? file : "?";
    if (g_package_dir.empty() || !path.starts_with(g_package_dir)) {
      out += "  " + path + ":" + std::to_string(PyFrame_GetLineNumber(frame)) + " in " + (function ? function : "?") + "\n";
      ++shown;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  if (PyErr_Occurred()) PyErr_Clear();
  return out;
}

// detect_anomaly's C++ side: anomaly mode on this thread between enter() and exit().
class AnomalyGuard {
 public:
  void enter() { guard_ = std::make_unique<ag::DetectAnomalyGuard>(); }
  void exit() { guard_.reset(); }

 private:
  std::unique_ptr<ag::DetectAnomalyGuard> guard_;
};

}  // namespace

void bind_anomaly(nb::module_& m) {
  ag::set_foreign_stack_capture(&python_frames);
  nb::class_<AnomalyGuard>(m, "_AnomalyGuard")
      .def(nb::init<>())
      .def("enter", &AnomalyGuard::enter)
      .def("exit", &AnomalyGuard::exit);
  m.def("is_anomaly_enabled", [] { return ag::AnomalyMode::enabled(); });
  m.def("_set_package_dir", [](std::string dir) { g_package_dir = std::move(dir); });
}

}  // namespace agpy
