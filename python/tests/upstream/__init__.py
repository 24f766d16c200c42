"""PyTorch's own Python tests in attograd's scope, restated as cases run by both frameworks
(common.py); docs/python.md lists the cases covered and those out of scope, with the reason."""
