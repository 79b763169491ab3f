"""Adds PyTorch's result dtypes for elementwise ops to tests/data/torch_elementwise_dtypes.json.

    /work/torchvenv/bin/python tools/gen_dtype_table.py erfc erfinv lgamma ...

For each named unary op and each input dtype it records the result dtype of
torch.<op>(x) (ember's name `special_i1` is torch.special.i1), or
"ERR:<Exception>:<message>" where PyTorch raises. Entries already in the table
are kept unless --force is given, so the rows recorded from PyTorch 1.13 stay
as they were.
"""
import argparse
import json
import os

import torch

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
PATH = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "torch_elementwise_dtypes.json")


def torch_fn(name):
    if name.startswith("special_"):
        return getattr(torch.special, name[len("special_"):])
    return getattr(torch, name)


def unary_row(name):
    f = torch_fn(name)
    row = {}
    for dt in DTYPES:
        x = torch.ones(3, dtype=getattr(torch, dt))
        try:
            row[dt] = str(f(x).dtype).split(".")[1]
        except Exception as e:  # noqa: BLE001 - recorded as data
            row[dt] = f"ERR:{type(e).__name__}:{str(e).splitlines()[0]}"
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ops", nargs="+")
    p.add_argument("--force", action="store_true")
    args = p.parse_args()
    with open(PATH) as f:
        table = json.load(f)
    for op in args.ops:
        if op in table["unary"] and not args.force:
            continue
        table["unary"][op] = unary_row(op)
    with open(PATH, "w") as f:
        json.dump(table, f, indent=0, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
