"""Makes the fixtures of test_generator.py with PyTorch: what each case of generator_cases.py
returns, and what programs/seeded_bigram.py prints, under torch. Run it with a Python that has
torch and numpy:

    /path/to/venv-with-torch/bin/python python/tests/make_generator_fixtures.py

It rewrites python/tests/fixtures/generator.npz and seeded_bigram.json; the tests read them with
NumPy only.
"""

import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "programs"))
import generator_cases  # noqa: E402
import seeded_bigram  # noqa: E402


def main():
    store = {}
    for case in generator_cases.CASES:
        for key, t in case(torch).items():
            store[f"{case.__name__}/{key}"] = t.detach().numpy()
    np.savez_compressed(os.path.join(HERE, "fixtures", "generator.npz"), **store)
    lines = []
    seeded_bigram.main(torch, lines.append)
    with open(os.path.join(HERE, "fixtures", "seeded_bigram.json"), "w") as f:
        json.dump({"torch_version": torch.__version__, "lines": lines}, f, indent=1)
        f.write("\n")
    print(f"{len(store)} values, {len(lines)} lines")


if __name__ == "__main__":
    main()
