// Python's cycle collector across the engine. A Python hook that refers back to its tensor (or to
// a module's globals that hold the tensor) makes a cycle that runs through C++: the tensor owns its
// hooks (a leaf) or its grad_fn node, which owns its hooks. Python's collector can free such a cycle
// only when the tensor's type tells it which Python objects the tensor holds: tensor_traverse visits
// the Python hooks reachable from it, and tensor_clear drops them once the collector found the
// cycle unreachable.
//
// Only what the Python object owns alone is visited (torch's rule): its TensorImpl when no C++ code
// holds another reference to it, and the grad_fn node when the impl is its only owner. A node that
// another node or tensor still uses keeps its hooks out of the count, so a live graph never loses a
// hook it will call.
#include "autograd/engine.h"
#include "common.h"
#include "python_hooks.h"

namespace agpy {

namespace {

// The impl belongs to this Python object alone (inline, or its keep-alive shared_ptr the only one).
bool python_owns(const ag::TensorImpl& t) { return t.weak_from_this().use_count() <= 1; }

template <class F> void for_each_python_hook(ag::TensorImpl& t, F&& f) {
  if (!python_owns(t)) return;
  if (t.hooks)
    for (auto& [id, fn] : t.hooks->entries)
      if (const PythonGradHook* h = fn.template target<PythonGradHook>()) f(h->fn.get().ptr());
  if (t.post_accumulate_hooks)
    for (auto& [id, fn] : t.post_accumulate_hooks->entries)
      if (const PythonPostAccumulateHook* h = fn.template target<PythonPostAccumulateHook>()) f(h->fn.get().ptr());
  if (t.grad_fn && t.grad_fn.use_count() == 1 && t.grad_fn->hooks)
    for (auto& [id, fn] : t.grad_fn->hooks->entries)
      if (const PythonGradHook* h = fn.template target<PythonGradHook>()) f(h->fn.get().ptr());
  for (ag::NodeHooks* nh : {t.accumulate_grad_hooks.get(),
                            t.grad_fn && t.grad_fn.use_count() == 1 ? t.grad_fn->node_hooks.get() : nullptr}) {
    if (!nh) continue;
    for (auto& [id, fn] : nh->pre.entries)
      if (const PythonNodePreHook* h = fn.template target<PythonNodePreHook>()) f(h->fn.get().ptr());
    for (auto& [id, fn] : nh->post.entries)
      if (const PythonNodePostHook* h = fn.template target<PythonNodePostHook>()) f(h->fn.get().ptr());
  }
}

template <class F> void erase_python_hooks(std::vector<std::pair<uint64_t, F>>& entries) {
  std::erase_if(entries, [](const auto& e) {
    return e.second.template target<PythonGradHook>() || e.second.template target<PythonPostAccumulateHook>() ||
           e.second.template target<PythonNodePreHook>() || e.second.template target<PythonNodePostHook>();
  });
}

}  // namespace

int tensor_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_VISIT(*dict);
  if (!nb::inst_ready(self)) return 0;
  int status = 0;
  for_each_python_hook(*nb::inst_ptr<ag::TensorImpl>(self), [&](PyObject* o) {
    if (status == 0 && o) status = visit(o, arg);
  });
  return status;
}

int tensor_clear(PyObject* self) {
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_CLEAR(*dict);
  if (!nb::inst_ready(self)) return 0;
  ag::TensorImpl& t = *nb::inst_ptr<ag::TensorImpl>(self);
  if (!python_owns(t)) return 0;
  // Moved out first: dropping a hook may run Python code that touches this tensor again.
  std::vector<std::pair<uint64_t, ag::GradHook>> hooks, node_hooks;
  std::vector<std::pair<uint64_t, ag::PostAccumulateGradHook>> post;
  if (t.hooks) hooks = t.hooks->entries;
  if (t.post_accumulate_hooks) post = t.post_accumulate_hooks->entries;
  if (t.hooks) erase_python_hooks(t.hooks->entries);
  if (t.post_accumulate_hooks) erase_python_hooks(t.post_accumulate_hooks->entries);
  if (t.grad_fn && t.grad_fn.use_count() == 1 && t.grad_fn->hooks) {
    node_hooks = t.grad_fn->hooks->entries;
    erase_python_hooks(t.grad_fn->hooks->entries);
  }
  std::vector<std::pair<uint64_t, ag::NodePreHook>> pre;
  std::vector<std::pair<uint64_t, ag::NodePostHook>> post_node;
  for (ag::NodeHooks* nh : {t.accumulate_grad_hooks.get(),
                            t.grad_fn && t.grad_fn.use_count() == 1 ? t.grad_fn->node_hooks.get() : nullptr}) {
    if (!nh) continue;
    pre.insert(pre.end(), nh->pre.entries.begin(), nh->pre.entries.end());
    post_node.insert(post_node.end(), nh->post.entries.begin(), nh->post.entries.end());
    erase_python_hooks(nh->pre.entries);
    erase_python_hooks(nh->post.entries);
  }
  return 0;
}

}  // namespace agpy
