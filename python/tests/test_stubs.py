"""The type stubs (attograd/_C.pyi) declare every public name of the module and of Tensor, so an
editor and a type checker see the whole API."""

import ast
import os

import attograd

STUB = os.path.join(os.path.dirname(attograd.__file__), "_C.pyi")


def declared():
    tree = ast.parse(open(STUB).read())
    module, tensor = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            module.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            module.add(node.target.id)
        elif isinstance(node, ast.Assign):
            module.update(t.id for t in node.targets)
        if isinstance(node, ast.ClassDef) and node.name == "Tensor":
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    tensor.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    tensor.add(item.target.id)
    return module, tensor


def test_every_module_name_is_declared():
    module, _ = declared()
    public = {n for n in dir(attograd._C) if not n.startswith("__")}
    assert not public - module, f"not in _C.pyi: {sorted(public - module)}"


def test_every_tensor_attribute_is_declared():
    _, tensor = declared()
    public = {n for n in dir(attograd.Tensor) if not n.startswith("_") or n in ("_version",)}
    operators = {n for n in vars(attograd._C.Tensor) if n.startswith("__") and n.endswith("__")
                 and n not in ("__doc__", "__module__", "__init__", "__new__", "__dict__", "__weakref__",
                               "__repr__", "__str__", "__format__", "__reduce_ex__", "__deepcopy__",
                               "__array_priority__", "__array_ufunc__", "__dictoffset__", "__weaklistoffset__",
                               "__nb_signature__")}
    missing = (public | operators) - tensor
    assert not missing, f"not in _C.pyi's Tensor: {sorted(missing)}"


def test_the_package_reexports_the_module():
    for name in ("tensor", "zeros", "Tensor", "float64", "no_grad", "save", "load", "from_numpy", "autograd"):
        assert hasattr(attograd, name)
    assert attograd.__version__ == attograd._C.__version__
