"""What every benchmark script shares: the command line, thread pinning, time
formatting and the markdown table."""
import argparse
import os


def base_parser(description, threads_help="threads for every library (default: all cores)"):
    """--threads, --cases and --no-torch, the options every benchmark takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help=threads_help)
    p.add_argument("--cases", nargs="*", default=None,
                   help="run only the cases whose name contains one of these strings")
    p.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    return p


def pin_threads(n):
    """BLAS thread pools read these when they load: call before importing NumPy and ember."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


def fmt_time(t):
    if t is None:
        return "n/a"
    if t < 1e-3:
        return f"{t * 1e6:.2f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def print_table(title, header, rows):
    """Prints `title`, then a markdown table with columns padded to their widest cell."""
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]

    def line(r):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    print(title)
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
