"""The stock DDP communication hooks: plain all-reduce, and all-reduce in float16 / bfloat16
(half the bytes on the wire, the gradients decompressed back into the bucket). Each takes
(process_group, bucket) and returns a Future of the bucket's averaged gradients."""
import ember
import ember.distributed as dist

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def _allreduce_fut(process_group, tensor):
    group = process_group if process_group is not None else dist.group.WORLD
    tensor.div_(dist.get_world_size(group))
    return dist.all_reduce(tensor, group=group, async_op=True).get_future().then(
        lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """Averages the bucket with one all-reduce (what DDP does without a hook)."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    group = process_group if process_group is not None else dist.group.WORLD
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(dist.get_world_size(group))

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer

    return dist.all_reduce(compressed, group=group, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """All-reduces the bucket in float16, then writes the result back in the bucket's dtype."""
    return _compress_hook(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """All-reduces the bucket in bfloat16, then writes the result back in the bucket's dtype."""
    return _compress_hook(ember.bfloat16, process_group, bucket)
