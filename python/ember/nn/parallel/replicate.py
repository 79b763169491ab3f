"""replicate: copies of a module on several devices whose parameters are differentiable copies
of the original's (the gradient of every replica flows back into the original parameters)."""
from .scatter_gather import _device

__all__ = ["replicate"]


def replicate(network, devices, detach=False):
    """One replica of ``network`` per device. A replica's parameters are ``p.to(device)`` of the
    original's (recorded copies, unless ``detach``) and its buffers are copies; modules shared
    inside the network stay shared inside each replica."""
    return [_clone_module(network, _device(d), detach, {}) for d in devices]


def _clone_module(module, device, detach, seen):
    if id(module) in seen:
        return seen[id(module)]
    replica = module.__new__(type(module))
    replica.__dict__ = module.__dict__.copy()
    seen[id(module)] = replica
    params = {}
    for name, p in module._parameters.items():
        if p is None:
            params[name] = None
        elif detach:
            params[name] = p.detach().to(device).requires_grad_(p.requires_grad)
        else:
            params[name] = p.to(device)  # differentiable: backward sums into the original
    replica.__dict__["_parameters"] = params
    replica.__dict__["_buffers"] = {n: (None if b is None else b.to(device))
                                    for n, b in module._buffers.items()}
    replica.__dict__["_modules"] = {n: (None if m is None else _clone_module(m, device, detach, seen))
                                    for n, m in module._modules.items()}
    replica.__dict__["_is_replica"] = True
    return replica
