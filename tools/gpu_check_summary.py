"""Writes the short summary of a tools/gpu_check.sh run (Markdown, to stdout) from what the run
left in its output folder: pass/fail/skip per test module from junit.xml, every skip reason
(a skip for want of a GPU is flagged: on the GPU machine none may remain), the failures, the
steps' exit codes and the benchmark table.

    python3 tools/gpu_check_summary.py OUT [--steps FILE] [--bench FILE] [--failed-modules FILE]

--failed-modules writes the test files with a failure or error, one a line, for --only-failed.
"""
import argparse
import collections
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

# A skip reason that means "no GPU here": on the GPU machine such a skip is a bug of the check.
WANTS_GPU = re.compile(r"needs? (a )?(CUDA|GPU|cuda)|no (CUDA )?GPU|without a GPU|cuda is not available"
                       r"|not ember\.cuda\.is_available", re.I)


def module_of(case):
    cls = case.get("classname") or ""
    parts = cls.split(".")
    mod = next((p for p in parts if p.startswith("test_")), parts[-1] if parts else "?")
    return f"tests/{mod}.py" if mod.startswith("test_") else mod


def read_junit(path):
    counts = collections.defaultdict(collections.Counter)
    skips = collections.Counter()
    failures = []
    if not path.exists():
        return counts, skips, failures
    for case in ET.parse(path).iter("testcase"):
        mod = module_of(case)
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                msg = (child.get("message") or child.text or "").strip().splitlines()
                failures.append((mod, case.get("name"), msg[0][:160] if msg else ""))
            elif child.tag == "skipped":
                outcome = "skipped"
                skips[(child.get("message") or "").strip()[:160]] += 1
        counts[mod][outcome] += 1
    return counts, skips, failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--steps", type=Path)
    ap.add_argument("--bench", type=Path)
    ap.add_argument("--failed-modules", type=Path)
    ap.add_argument("--faults", type=Path, help="the tests that left the CUDA context broken")
    a = ap.parse_args()
    counts, skips, failures = read_junit(a.out / "junit.xml")
    if a.failed_modules:
        bad = sorted({m for m, _, _ in failures if m.startswith("tests/")})
        a.failed_modules.write_text("".join(m + "\n" for m in bad))

    w = sys.stdout.write
    w("# GPU check summary\n\n")
    env = a.out / "env.txt"
    if env.exists():
        w("```\n" + env.read_text().strip() + "\n```\n\n")
    if a.steps and a.steps.exists():
        w("## Steps\n\n" + "".join(f"- {s}\n" for s in a.steps.read_text().splitlines()) + "\n")
    total = collections.Counter()
    for c in counts.values():
        total.update(c)
    w(f"## Tests: {total['passed']} passed, {total['failed']} failed, {total['error']} errors, "
      f"{total['skipped']} skipped\n\n")
    if counts:
        w("| module | passed | failed | errors | skipped |\n|---|---|---|---|---|\n")
        for mod in sorted(counts):
            c = counts[mod]
            flag = " **!**" if c["failed"] or c["error"] else ""
            w(f"| {mod}{flag} | {c['passed']} | {c['failed']} | {c['error']} | {c['skipped']} |\n")
        w("\n")
    gpu_skips = sum(n for r, n in skips.items() if WANTS_GPU.search(r))
    if skips:
        w(f"## Skip reasons ({gpu_skips} for want of a GPU: must be 0 on the GPU machine)\n\n")
        for reason, n in skips.most_common():
            w(f"- {n} x {'**GPU** ' if WANTS_GPU.search(reason) else ''}{reason or '(no reason)'}\n")
        w("\n")
    if failures:
        w(f"## Failures ({len(failures)}; the first 60)\n\n")
        for mod, name, msg in failures[:60]:
            w(f"- {mod}::{name}: {msg}\n")
        w("\n")
    if a.faults and a.faults.exists() and a.faults.stat().st_size:
        lines = a.faults.read_text(errors="replace").splitlines()
        w(f"## Kernel faults ({len(lines)} tests left the CUDA context broken; "
          "Note [Sticky CUDA errors in the suite])\n\n" + "".join(f"- {ln.replace(chr(9), ': ', 1)}\n" for ln in lines) + "\n")
    memcheck = a.out / "memcheck.log"
    if memcheck.exists() and memcheck.stat().st_size:
        lines = [ln for ln in memcheck.read_text(errors="replace").splitlines()
                 if "ERROR SUMMARY" in ln or re.search(r"\d+ (passed|failed)", ln)]
        w("## memcheck\n\n" + "".join(f"    {ln}\n" for ln in lines[-3:]) + "\n")
        # the first report of each faulting kernel (the culprit reruns under memcheck)
        text = memcheck.read_text(errors="replace").splitlines()
        seen = []
        for i, ln in enumerate(text):
            if re.match(r"=+ (Invalid|Out of range|Misaligned|Illegal)", ln):
                block = " / ".join(x.strip("= ").strip() for x in text[i:i + 4] if x.strip("= "))
                if block not in seen:
                    seen.append(block)
        if seen:
            w("Faulting accesses (first of each):\n\n" + "".join(f"- {b}\n" for b in seen[:30]) + "\n")
    qs = a.out / "quickstart.log"
    if qs.exists() and qs.stat().st_size:
        w("## Quickstart on cuda\n\n" + "".join(f"    {ln}\n" for ln in qs.read_text().splitlines()[-4:]) + "\n")
    if a.bench and a.bench.exists() and a.bench.stat().st_size:
        lines = a.bench.read_text().splitlines()
        start = next((i for i, ln in enumerate(lines) if ln.startswith("case")), 0)
        w("## bench_cuda (ember vs this machine's PyTorch)\n\n```\n" + "\n".join(lines[start:]) + "\n```\n")


if __name__ == "__main__":
    main()
