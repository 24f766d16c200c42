"""Records what torch observes in the upstream cases (python/tests/upstream/*_cases.py) into
python/tests/fixtures/upstream.json, which test_upstream_*.py compare attograd with. Run it with a
Python that has torch and numpy:

    /path/to/venv-with-torch/bin/python python/tests/make_upstream_fixtures.py
"""

import json
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from upstream import autograd_cases, nn_cases, optim_cases  # noqa: E402
from upstream.compare import FIXTURE, plain  # noqa: E402

if __name__ == "__main__":
    torch.set_default_dtype(torch.float32)
    warnings.simplefilter("ignore")  # those a case records it records itself (common.warned)
    observed = {"torch": torch.__version__}
    for module in (autograd_cases, nn_cases, optim_cases):
        for name, fn in module.CASES.items():
            torch.manual_seed(0)
            observed[f"{module.__name__.split('.')[-1]}/{name}"] = plain(fn(torch))
    with open(FIXTURE, "w") as f:
        json.dump(observed, f, indent=0, sort_keys=True)
        f.write("\n")
    print(f"{len(observed) - 1} cases written to {FIXTURE} with torch {torch.__version__}")
