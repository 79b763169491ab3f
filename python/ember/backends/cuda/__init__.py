"""CUDA backend switches, as ``torch.backends.cuda``.

``matmul.allow_tf32`` (default False) lets cuBLAS run float32 matrix products on TF32
tensor cores; it is the same switch as ``ember.set_float32_matmul_precision("high")``.
``matmul.allow_fp16_reduced_precision_reduction`` and
``matmul.allow_bf16_reduced_precision_reduction`` (default True) let cuBLAS reduce
16-bit products in 16-bit precision.
"""
from ... import _C
from .._flags import flag_property

__all__ = ["is_built", "matmul"]


def is_built() -> bool:
    """Whether this build of ember has the CUDA backend (whether or not a GPU is present)."""
    return bool(_C._cuda_version)


class cuBLASModule:
    """``ember.backends.cuda.matmul``: the cuBLAS switches."""

    allow_fp16_reduced_precision_reduction = flag_property(
        "allow_fp16_reduced_precision_reduction",
        "allow_fp16_reduced_precision_reduction: cuBLAS may reduce float16 products in float16")
    allow_bf16_reduced_precision_reduction = flag_property(
        "allow_bf16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction: cuBLAS may reduce bfloat16 products in "
        "bfloat16")

    @property
    def allow_tf32(self) -> bool:
        """Whether float32 matrix products may use TF32 tensor cores (default False)."""
        return _C._get_float32_matmul_precision() != 0

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"allow_tf32 expects a bool, got {type(value).__name__}")
        _C._set_float32_matmul_precision(1 if value else 0)

    def __setattr__(self, name, value):
        if not hasattr(type(self), name):
            raise AttributeError(f"ember.backends.cuda.matmul has no setting '{name}'")
        super().__setattr__(name, value)

    def __repr__(self):
        return (f"cuBLASModule(allow_tf32={self.allow_tf32}, "
                f"allow_fp16_reduced_precision_reduction="
                f"{self.allow_fp16_reduced_precision_reduction}, "
                f"allow_bf16_reduced_precision_reduction="
                f"{self.allow_bf16_reduced_precision_reduction})")


matmul = cuBLASModule()
