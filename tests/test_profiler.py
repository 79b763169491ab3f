"""ember.profiler: C++ op recording (kernels/dispatch.h, core/profiler.cpp) and the
torch.profiler-style Python API over it (tables, Chrome traces, schedules)."""
import glob
import json
import os
import re
import threading
import warnings

import numpy as np
import pytest

import ember
from ember.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)


def _names(prof):
    return [e.name for e in prof.events()]


def test_ops_are_recorded_with_nesting_and_times(device):
    x = ember.randn(64, 64, device=device)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("my_block"):
            y = x + x
            z = ember.mm(y, y)
            s = z.sum()
    names = _names(prof)
    assert "my_block" in names and "add" in names and "sum" in names
    assert any("mm" in n or "matmul" in n or "gemm" in n for n in names) or len(names) >= 4
    block = next(e for e in prof.events() if e.name == "my_block")
    kids = {c.name for c in block.cpu_children}
    assert {"add", "sum"} <= kids
    assert block.cpu_time_total >= sum(c.cpu_time_total for c in block.cpu_children)
    assert block.self_cpu_time_total >= 0
    for e in prof.events():
        assert e.time_range_end >= e.time_range_start
    del s


def test_nothing_recorded_when_off():
    assert not ember._C._profiler_enabled()
    ember.ones(3) + 1  # not profiling: records nothing, raises nothing
    with profile() as prof:
        pass
    ember.ones(3) + 1
    assert len(prof.events()) == 0
    assert not ember._C._profiler_enabled()


def test_key_averages_counts_and_table():
    x = ember.randn(8, 8)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(5):
            x = x + 1
    avgs = prof.key_averages()
    add = next(a for a in avgs if a.key == "add")
    assert add.count == 5
    assert add.cpu_time == pytest.approx(add.cpu_time_total / 5)
    table = avgs.table(sort_by="count", row_limit=3)
    lines = table.splitlines()
    assert re.match(r"^-+(  -+)+  $", lines[0])
    header = lines[1]
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                "# of Calls"):
        assert col in header
    assert lines[-1].startswith("Self CPU time total: ")
    body = lines[3:-2]
    assert 1 <= len(body) <= 3
    assert body[0].split()[0] == "add" and body[0].split()[-1] == "5"
    # Right-aligned columns of equal width, as PyTorch prints them.
    assert all(len(line) == len(header) for line in body)
    assert re.search(r"\d+\.\d{3}(us|ms|s)", body[0])
    assert "Self CPU time total" in str(avgs)
    with pytest.raises(AttributeError, match="unknown sort_by"):
        avgs.table(sort_by="bogus")


def test_sort_by_self_cpu_time():
    with profile() as prof:
        with record_function("outer"):
            ember.randn(200, 200).exp()
    rows = prof.key_averages()
    table = rows.table(sort_by="self_cpu_time_total")
    lines = table.splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("---")]
    lines = lines[seps[1] + 1:seps[2]]  # the rows: between the 2nd and 3rd rules (the footer
    times = []                           # has one line per device that ran)
    for line in lines:
        m = re.findall(r"(\d+\.\d{3})(us|ms|s)", line)
        v, u = m[0]
        times.append(float(v) * {"us": 1, "ms": 1e3, "s": 1e6}[u])
    assert times == sorted(times, reverse=True)


def test_record_shapes_group_by_input_shape():
    a, b = ember.ones(2, 3), ember.ones(4, 5)
    with profile(record_shapes=True) as prof:
        a + a
        a + a
        b + b
    groups = prof.key_averages(group_by_input_shape=True)
    adds = {str(g.input_shapes): g.count for g in groups if g.key == "add"}
    assert adds == {"[[2, 3], [2, 3]]": 2, "[[4, 5], [4, 5]]": 1}
    table = groups.table(sort_by="count")
    assert "Input Shapes" in table.splitlines()[1]
    assert "[[2, 3], [2, 3]]" in table
    with profile() as prof2:
        a + a
    with pytest.raises(RuntimeError, match="record_shapes=True"):
        prof2.key_averages(group_by_input_shape=True)
    assert prof2.events()[0].input_shapes == []


def test_profile_memory():
    with profile(profile_memory=True) as prof:
        with record_function("alloc"):
            keep = ember.empty(1 << 20)  # 4 MiB float32, kept alive
        with record_function("temp"):
            ember.empty(1 << 18) + 1  # allocated and freed inside
    ev = {e.name: e for e in prof.events()}
    assert ev["alloc"].cpu_memory_usage >= 4 << 20
    assert ev["temp"].cpu_memory_usage <= 0 < ev["temp"].cpu_children[0].cpu_memory_usage or \
        ev["temp"].cpu_memory_usage == 0
    table = prof.key_averages().table(sort_by="cpu_memory_usage")
    assert "CPU Mem" in table and "Self CPU Mem" in table and "Mb" in table
    del keep


def test_backward_nodes_are_recorded():
    x = ember.randn(4, 4, requires_grad=True)
    with profile() as prof:
        (x * x).sum().backward()
    names = _names(prof)
    assert any(n.startswith("autograd::engine::evaluate_function: MulBackward") for n in names)
    assert any(n.startswith("autograd::engine::evaluate_function: SumBackward") for n in names)


def test_record_function_decorator_and_threads():
    @record_function("decorated")
    def work():
        return ember.ones(10) * 2

    results = []

    def thread_body():
        results.append(work())

    with profile() as prof:
        work()
        t = threading.Thread(target=thread_body)
        t.start()
        t.join()
    decorated = [e for e in prof.events() if e.name == "decorated"]
    assert len(decorated) == 2
    assert len({e.thread for e in decorated}) == 2  # both threads' buffers are collected
    with pytest.raises(TypeError, match="name must be str"):
        record_function(3)
    # Outside a profile the scope is a harmless no-op.
    with record_function("idle"):
        ember.ones(1) + 1


def test_chrome_trace(tmp_path):
    x = ember.randn(16, 16, requires_grad=True)
    with profile(record_shapes=True, profile_memory=True) as prof:
        with record_function("fwd"):
            y = (x @ x).relu().sum()
        y.backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    xs = [e for e in events if e["ph"] == "X"]
    assert xs
    for e in xs:
        assert {"name", "ts", "dur", "pid", "tid", "args", "cat"} <= set(e)
        assert e["dur"] >= 0
    user = [e for e in xs if e["name"] == "fwd"]
    assert user and user[0]["cat"] == "user_annotation"
    assert any("Input Dims" in e["args"] for e in xs)
    mem = [e for e in events if e["ph"] == "i" and e["name"] == "[memory]"]
    assert mem and all("Bytes" in e["args"] and "Total Allocated" in e["args"] for e in mem)
    # Children lie within their parents on the timeline.
    fwd = user[0]
    inner = [e for e in xs if e["tid"] == fwd["tid"] and e["name"] == "sum"]
    assert inner and all(fwd["ts"] <= e["ts"] <= fwd["ts"] + fwd["dur"] + 1e-3 for e in inner)
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    import gzip
    assert json.loads(gzip.open(gz, "rt").read())["traceEvents"]


def test_schedule_function_matches_torch_semantics():
    s = schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2)
    A = ProfilerAction
    got = [s(i) for i in range(11)]
    assert got == [A.NONE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
                   A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE]
    with pytest.warns(UserWarning, match="warmup"):
        schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError):
        schedule(wait=0, warmup=0, active=0)


def test_schedule_driven_profile_and_tensorboard_handler(tmp_path):
    traces = []

    def on_ready(p):
        traces.append([e.name for e in p.events()])
        tensorboard_trace_handler(str(tmp_path), worker_name="w0")(p)

    x = ember.ones(4)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=on_ready) as prof:
        for step in range(6):
            with record_function(f"work{step}"):
                x = x + 1
            prof.step()
    assert len(traces) == 1
    names = traces[0]
    # Steps 2 and 3 were active; the warm-up step 1 and the idle ones are not in the results.
    assert "ProfilerStep#2" in names and "ProfilerStep#3" in names
    assert "work2" in names and "work3" in names
    for n in ("work0", "work1", "work4", "work5", "ProfilerStep#1"):
        assert n not in names
    files = glob.glob(os.path.join(str(tmp_path), "w0.*.pt.trace.json"))
    assert len(files) == 1
    json.load(open(files[0]))


def test_one_profiler_at_a_time_and_cuda_activity_without_gpu():
    with profile():
        with pytest.raises(RuntimeError, match="already collecting"):
            with profile():
                pass
    if not ember.cuda.is_available():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            p = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        assert any("CUDA is not available" in str(x.message) for x in w)
        assert p.activities == {ProfilerActivity.CPU}
    with pytest.raises(TypeError, match="ProfilerActivity"):
        profile(activities=["cpu"])


def test_events_before_results_raise():
    p = profile()
    with pytest.raises(AssertionError, match="no results"):
        p.events()
    np.testing.assert_array_equal((ember.ones(2) + 1).numpy(), [2, 2])


def test_device_ranges_become_kernels_device_time_and_flows(tmp_path):
    """Note [Profiler device ranges]: the CUDA backend's timed ranges (correlation, device,
    stream, start_ns, end_ns) attach to the op scope with that correlation as its device
    time (self and every enclosing scope's total) and appear in the Chrome trace as kernels
    on a GPU process / stream thread, with an ac2g flow from the launching op. Synthetic
    ranges: this part needs no GPU."""
    from ember.profiler import _build_events, _chrome_trace
    # C++ records: (name, kind, tid, start, end, corr, parent, depth, shapes, dtypes,
    #               self_alloc, self_free, mem_bytes, total)
    raw = [("step", 1, 7, 0, 10_000, 1, -1, 0, [], [], 0, 0, 0, 0),
           ("add", 0, 7, 1_000, 2_000, 2, 1, 1, [], [], 0, 0, 0, 0),
           ("mul", 0, 7, 3_000, 4_000, 3, 1, 1, [], [], 0, 0, 0, 0)]
    kernels = [(2, 0, 0, 5_000, 7_000), (3, 0, 0x55, 8_000, 8_500), (99, 0, 0, 0, 1)]
    events, memory = _build_events(raw, False, kernels)
    by = {e.name: e for e in events}
    assert by["add"].self_device_time_total == pytest.approx(2.0)
    assert by["mul"].device_time_total == pytest.approx(0.5)
    assert by["step"].self_device_time_total == 0
    assert by["step"].device_time_total == pytest.approx(2.5)
    trace = _chrome_trace(events, memory, 1234)["traceEvents"]
    ks = [t for t in trace if t.get("cat") == "kernel"]
    assert sorted((k["name"], k["ts"], k["dur"]) for k in ks) == [("add", 5.0, 2.0),
                                                                 ("mul", 8.0, 0.5)]
    assert len({k["tid"] for k in ks}) == 2 and all(k["pid"] != 1234 for k in ks)
    starts = [t for t in trace if t.get("ph") == "s"]
    ends = [t for t in trace if t.get("ph") == "f"]
    assert {t["id"] for t in starts} == {t["id"] for t in ends} == {2, 3}
    assert all(t["pid"] == 1234 for t in starts)
    names = {t["args"]["name"] for t in trace if t.get("ph") == "M"}
    assert "GPU 0" in names and "stream 0x55" in names
    path = tmp_path / "t.json"
    with open(path, "w") as f:
        json.dump(_chrome_trace(events, memory, 1234), f)
    assert json.load(open(path))["traceEvents"]


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_activity_times_kernels(tmp_path):
    x = ember.randn(512, 512, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            y = (x @ x).relu().sum()
        ember.cuda.synchronize()
    assert y.device.type == "cuda"
    ev = [e for e in prof.events() if e.name == "matmul"]
    assert ev and all(e.self_device_time_total > 0 for e in ev)
    assert "Self CUDA" in prof.key_averages().table(sort_by="cuda_time_total")
    prof.export_chrome_trace(str(tmp_path / "cuda.json"))
    trace = json.load(open(tmp_path / "cuda.json"))["traceEvents"]
    assert any(t.get("cat") == "kernel" for t in trace)
    assert any(t.get("ph") == "f" for t in trace)
