"""The rendezvous stores: TCPStore (server and clients), FileStore, HashStore, PrefixStore, with
PyTorch's semantics (compare_set, add, wait with timeouts) and error classes."""
import os
import threading
import time
from datetime import timedelta

import pytest

import ember.distributed as dist


@pytest.fixture
def tcp():
    master = dist.TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=5),
                           wait_for_workers=False)
    client = dist.TCPStore("127.0.0.1", master.port, None, False, timedelta(seconds=5))
    return master, client


def stores(tmp_path):
    master = dist.TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=5),
                           wait_for_workers=False)
    fs = dist.FileStore(str(tmp_path / "store"), -1)
    return {"tcp": (master, dist.TCPStore("127.0.0.1", master.port, timeout=timedelta(seconds=5))),
            "file": (fs, dist.FileStore(str(tmp_path / "store"))),
            "hash": (lambda h: (h, h.clone()))(dist.HashStore()),
            "prefix": (lambda h: (dist.PrefixStore("p", h), dist.PrefixStore("p", h.clone())))(
                dist.HashStore())}


@pytest.mark.parametrize("kind", ["tcp", "file", "hash", "prefix"])
def test_store_semantics(tmp_path, kind):
    a, b = stores(tmp_path)[kind]
    a.set_timeout(timedelta(seconds=2))
    b.set_timeout(timedelta(seconds=2))
    a.set("k", "v")
    assert b.get("k") == b"v"
    a.set("bin", b"\x00\xff")
    assert b.get("bin") == b"\x00\xff"
    assert a.add("n", 2) == 2 and b.add("n", 5) == 7 and a.add("n", 0) == 7
    # compare_set: PyTorch's rules
    assert a.compare_set("c", "", "first") == b"first"
    assert a.compare_set("c", "wrong", "x") == b"first"
    assert b.compare_set("c", "first", "second") == b"second"
    assert a.compare_set("missing", "expected", "x") == b"expected"
    assert not a.check(["missing"])
    assert a.check(["k", "c"])
    b.append("app", "ab")
    b.append("app", "cd")
    assert a.get("app") == b"abcd"
    a.multi_set(["m1", "m2"], ["1", b"2"])
    assert b.multi_get(["m1", "m2"]) == [b"1", b"2"]
    assert a.delete_key("k") and not a.delete_key("k")
    assert a.num_keys() >= 5
    # wait: returns once set by another thread, raises after the timeout
    threading.Timer(0.2, lambda: b.set("late", "1")).start()
    a.wait(["late"])
    t0 = time.monotonic()
    with pytest.raises(dist.DistStoreError, match="wait timeout after 300ms, keys: .*never"):
        a.wait(["never"], timedelta(milliseconds=300))
    assert time.monotonic() - t0 < 2
    b.set_timeout(timedelta(milliseconds=200))
    with pytest.raises(dist.DistStoreError):
        b.get("never either")
    with pytest.raises(dist.DistStoreError, match="not an integer"):
        a.add("app", 1)
    with pytest.raises(TypeError, match="str or bytes"):
        a.set("x", 3)
    assert a.timeout == timedelta(seconds=2)
    assert issubclass(dist.DistStoreError, dist.DistError) and issubclass(dist.DistError, RuntimeError)


def test_tcp_store_properties(tcp):
    master, client = tcp
    assert master.host == "127.0.0.1" and client.port == master.port > 0
    assert client._local_address() == "127.0.0.1"
    clone = client.clone()
    clone.set("from clone", "1")
    assert master.get("from clone") == b"1"


def test_tcp_connect_timeout():
    port = dist._d._find_free_port("127.0.0.1")
    t0 = time.monotonic()
    with pytest.raises(dist.DistNetworkError, match="timed out after 500ms while trying to connect"):
        dist.TCPStore("127.0.0.1", port, timeout=timedelta(milliseconds=500))
    assert time.monotonic() - t0 < 3


def test_tcp_port_in_use(tcp):
    master, _ = tcp
    with pytest.raises(dist.DistNetworkError, match="EADDRINUSE"):
        dist.TCPStore("127.0.0.1", master.port, None, True, wait_for_workers=False)


def test_tcp_wait_for_workers():
    port = dist._d._find_free_port("127.0.0.1")
    out = {}

    def worker():
        time.sleep(0.2)
        out["w"] = dist.TCPStore("127.0.0.1", port, 2, False, timedelta(seconds=5))

    th = threading.Thread(target=worker)
    th.start()
    master = dist.TCPStore("127.0.0.1", port, 2, True, timedelta(seconds=5))
    th.join()
    assert master.add("init/", 0) == 2
    with pytest.raises(dist.DistStoreError, match="1/2 clients joined"):
        dist.TCPStore("127.0.0.1", 0, 2, True, timedelta(milliseconds=300))


def test_tcp_server_death_is_a_network_error():
    master = dist.TCPStore("127.0.0.1", 0, None, True, wait_for_workers=False)
    client = dist.TCPStore("127.0.0.1", master.port, timeout=timedelta(seconds=5))
    client.set("a", "1")
    del master  # stops the server
    with pytest.raises(dist.DistNetworkError, match="lost"):
        client.get("a")


def test_multi_tenant_shares_one_server():
    a = dist.TCPStore("127.0.0.1", 0, None, True, wait_for_workers=False, multi_tenant=True)
    b = dist.TCPStore("127.0.0.1", a.port, None, True, wait_for_workers=False, multi_tenant=True)
    a.set("shared", "yes")
    assert b.get("shared") == b"yes"


def test_file_store_cleanup(tmp_path):
    path = str(tmp_path / "fs")
    s1 = dist.FileStore(path, 2)
    s2 = dist.FileStore(path, 2)
    s1.set("a", "1")
    assert s2.get("a") == b"1" and s1.num_keys() == 1
    del s1
    assert os.path.exists(path)
    del s2
    assert not os.path.exists(path)


def test_prefix_store_isolates_keys():
    h = dist.HashStore()
    p = dist.PrefixStore("ns", h)
    p.set("k", "v")
    assert h.get("ns/k") == b"v" and not h.check(["k"])
    assert p.underlying_store is h


def test_init_method_file_and_tcp(tmp_path):
    if not dist.is_gloo_available():
        pytest.skip("built without Gloo")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/rdzv", rank=0, world_size=1)
    dist.destroy_process_group()
    port = dist._d._find_free_port("127.0.0.1")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}?rank=0&world_size=1")
    assert dist.get_world_size() == 1
    dist.destroy_process_group()
