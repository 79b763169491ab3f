"""SyncBatchNorm: batch normalization whose batch statistics are those of the whole
distributed batch (every process of the group), not of each process's share of it."""
import ember

from .. import functional as F
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


def _bcast(t, ndim):
    return t.view(1, -1, *([1] * (ndim - 2)))


class _SyncBatchNormFunction(ember.autograd.Function):
    """Forward: per-channel (count, mean, M2) of each rank, all-gathered in one collective and
    combined (Chan's parallel formula: accurate where sum-of-squares is not); normalizes with
    the fused batch_norm kernel. Backward: one all-reduce of the per-channel sums of dy and
    dy * (x - mean); weight and bias gradients stay local (DDP averages them)."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group,
                world_size):
        import ember.distributed as dist

        c = input.size(1)
        dims = [0] + list(range(2, input.dim()))
        x = input.detach()
        acc = ember.float64 if x.dtype == ember.float64 else ember.float32
        xa = x.to(acc)
        count = x.numel() // c if c else 0
        mean = xa.mean(dims) if count else ember.zeros(c, dtype=acc, device=x.device)
        m2 = ((xa - _bcast(mean, x.dim())) ** 2).sum(dims) if count else ember.zeros_like(mean)
        local = ember.stack([ember.full_like(mean, float(count)), mean, m2])
        gathered = ember.empty((world_size, 3, c), dtype=acc, device=x.device)
        dist.all_gather_into_tensor(gathered, local, group=group)
        counts, means, m2s = gathered[:, 0], gathered[:, 1], gathered[:, 2]
        total = counts.sum(0)
        if float(total[0]) <= 1 and running_mean is not None:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)} over {world_size} processes")
        g_mean = (counts * means).sum(0) / total
        g_m2 = (m2s + counts * (means - g_mean) ** 2).sum(0)
        var = g_m2 / total
        invstd = (var + eps).rsqrt()
        if running_mean is not None:
            n = float(total[0])
            with ember.no_grad():
                running_mean.mul_(1 - momentum).add_(g_mean.to(running_mean.dtype), alpha=momentum)
                unbiased = var * (n / (n - 1)) if n > 1 else var
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        out = F.batch_norm(x, g_mean.to(x.dtype), var.to(x.dtype), weight, bias, False, 0.0, eps)
        ctx.save_for_backward(x, weight, g_mean, invstd)
        ctx.total = float(total[0])
        ctx.group = group
        return out

    @staticmethod
    def backward(ctx, grad_output):
        import ember.distributed as dist

        x, weight, mean, invstd = ctx.saved_tensors
        dims = [0] + list(range(2, x.dim()))
        nd = x.dim()
        dy = grad_output.to(mean.dtype)
        xmu = x.to(mean.dtype) - _bcast(mean, nd)
        sum_dy = dy.sum(dims)
        sum_dy_xmu = (dy * xmu).sum(dims)
        grad_weight = (sum_dy_xmu * invstd).to(weight.dtype) if weight is not None else None
        grad_bias = sum_dy.to(weight.dtype) if weight is not None else None
        grad_input = None
        if ctx.needs_input_grad[0]:
            sums = ember.stack([sum_dy, sum_dy_xmu])
            dist.all_reduce(sums, group=ctx.group)
            mean_dy = sums[0] / ctx.total
            mean_dy_xmu = sums[1] / ctx.total
            scale = invstd if weight is None else invstd * weight.to(invstd.dtype)
            grad_input = (dy - _bcast(mean_dy, nd)
                          - xmu * _bcast(invstd * invstd * mean_dy_xmu, nd)) * _bcast(scale, nd)
            grad_input = grad_input.to(x.dtype)
        if weight is None or not ctx.needs_input_grad[1]:
            grad_weight = None
        if weight is None or not ctx.needs_input_grad[2]:
            grad_bias = None
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over N-D input whose training statistics cover the whole distributed batch:
    each process's per-channel statistics are combined across ``process_group`` (default: the
    world) in one collective. Outside training, or in a group of one, it is BatchNorm. Use
    ``SyncBatchNorm.convert_sync_batchnorm(model)`` to swap a model's BatchNorm layers."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        import ember.distributed as dist

        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        running_mean = self.running_mean if use_stats else None
        running_var = self.running_var if use_stats else None
        group = self.process_group if self.process_group is not None else dist.group.WORLD
        world = 1
        if bn_training and self.training and dist.is_initialized():
            world = dist.get_world_size(group)
        if world <= 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias,
                                bn_training, factor, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean,
                                            running_var, self.eps, factor, group, world)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d layer replaced by a SyncBatchNorm sharing its
        parameters and statistics (returns the new root when ``module`` itself is one)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group)
            if module.affine:
                with ember.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out
