"""parallel_apply: runs each replica on its inputs in its own thread (the C++ ops release the
GIL, so the replicas' work overlaps)."""
import threading

import ember

__all__ = ["parallel_apply"]


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """``[modules[i](*inputs[i], **kwargs_tup[i]) ...]``, concurrently; re-raises the first
    error with the replica's index."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number "
                             f"of inputs {len(inputs)}")
    if kwargs_tup is None:
        kwargs_tup = ({},) * len(modules)
    results = {}
    grad_enabled = ember.is_grad_enabled()

    def worker(i, module, inp, kwargs):
        try:
            with ember.set_grad_enabled(grad_enabled):
                if not isinstance(inp, (list, tuple)):
                    inp = (inp,)
                results[i] = module(*inp, **kwargs)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            results[i] = e

    if len(modules) > 1:
        threads = [threading.Thread(target=worker, args=(i, m, x, k))
                   for i, (m, x, k) in enumerate(zip(modules, inputs, kwargs_tup))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        worker(0, modules[0], inputs[0], kwargs_tup[0])
    outputs = []
    for i in range(len(inputs)):
        out = results[i]
        if isinstance(out, BaseException):
            raise RuntimeError(f"Caught {type(out).__name__} in replica {i}: {out}") from out
        outputs.append(out)
    return outputs
