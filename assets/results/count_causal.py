"""Tensor-core multiply-adds of chapter 6 kernels, causal and not, counted by grader.cuda.tccount.

    PYTHONPATH=tests:. python3 assets/results/count_causal.py [--out FILE]

For each entry: one plain launch, then one counted launch at ch06.COUNT_SIZE, for causal=True and
causal=False; the result of every launch is checked against the float64 reference. Prints the
counts as shares of the whole N x N product (2 * B * H * N^2 * D multiply-adds)."""
import argparse
import dataclasses
import json

import torch

from grader.cuda import tccount
from grader.chapters import ch06
from submissions.build import launchers

ENTRIES = ["ch06/correct", "correct/ch06_minimal", "correct/ch06_mask_every_tile", "correct/ch06_paired_blocks",
           "correct/ch06_reverse_order", "ch06/no_skip", "wrong/slowed_noncausal",
           "correct/ch06_mask_every_tile@4", "correct/ch06_minimal@8"]


def load(entry):
    """An entry's launcher; `name@W` runs it with num_warps=W (the variants probe replicated MMAs)."""
    name, _, warps = entry.partition("@")
    if not warps:
        return launchers(*name.split("/"), ["attention-solution"])["attention"]
    from submissions.build import load as load_module, run_cell
    source = load_module(*name.split("/")).CELLS["attention-solution"]
    if "num_warps=" in source:
        source = source.replace("num_warps=8", f"num_warps={warps}")
    else:
        source = source.replace("CAUSAL=causal)", f"CAUSAL=causal, num_warps={warps})")
    assert f"num_warps={warps}" in source, entry
    ns = {"__name__": entry.replace("/", "_").replace("@", "_w")}
    run_cell(source, ns, f"<{entry}>")
    return ns["attention"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    args = ap.parse_args()
    b, h, n, d = size = ch06.COUNT_SIZE
    full = 2 * b * h * n * n * d
    gen = torch.Generator(device="cuda").manual_seed(20261121)
    q, k, v = (torch.randn(size, generator=gen, device="cuda").half() for _ in range(3))
    rows = {}
    print(f"{torch.cuda.get_device_name()}, size {size}, full product {full:,} multiply-adds")
    print("| entry | causal share | non-causal share | causal / non-causal | kernels |")
    print("|---|---|---|---|---|")
    for entry in ENTRIES:
        attention = load(entry)
        found = {}
        for causal in (True, False):
            ref = ch06.attention_reference(q.double(), k.double(), v.double(), causal)
            out = torch.full_like(q, float("nan"))
            attention(q, k, v, out, causal)
            torch.cuda.synchronize()
            out.fill_(float("nan"))
            with tccount.counting() as tally:
                attention(q, k, v, out, causal)
            torch.cuda.synchronize()
            torch.testing.assert_close(out.double(), ref, rtol=ch06.TOLERANCE[0], atol=ch06.TOLERANCE[1])
            found[causal] = dataclasses.asdict(tally)
        c = sum(found[True]["macs"].values())
        nc = sum(found[False]["macs"].values())
        rows[entry] = {"causal": found[True], "noncausal": found[False], "full": full}
        print(f"| {entry} | {c / full:.4f} | {nc / full:.4f} | {c / nc if nc else float('nan'):.4f} | "
              f"{', '.join(found[True]['macs'])} {found[True]['uncounted'] or ''} |", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "size": size, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
