"""nn.utils.rnn: PackedSequence and the packing helpers, as torch.nn.utils.rnn.

The index work is C++ (``_C._pack_padded_sequence``, ``_pad_packed_sequence``,
``_pad_sequence``): each builds one index and gathers with ``index_select``, so
the results are differentiable and no Python loop runs over the data.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Optional

import ember
from ember import _C

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]

_PackedSequenceBase = namedtuple("PackedSequence",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """Holds the data and the list of ``batch_sizes`` of a packed sequence.

    ``data`` holds the time steps one after the other (step ``t`` being
    ``batch_sizes[t]`` rows); ``sorted_indices`` / ``unsorted_indices`` map the
    original batch order to the length-sorted one and back (None when the
    batch was already sorted). Build one with :func:`pack_padded_sequence` or
    :func:`pack_sequence`, not directly.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError(
                    "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                    "be created manually. They should be instantiated by functions like "
                    "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                    "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        # PackedSequence((data, batch_sizes)) form
        if not (isinstance(data, (list, tuple)) and len(data) == 2):
            raise TypeError("PackedSequence: expected data and batch_sizes")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def _apply_data(self, fn):
        return type(self)(fn(self.data), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device
        si = None if self.sorted_indices is None else self.sorted_indices.to(dev)
        ui = None if self.unsorted_indices is None else self.unsorted_indices.to(dev)
        return type(self)(data, self.batch_sizes, si, ui)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self._apply_data(lambda d: d.to(ember.float64))

    def float(self):
        return self._apply_data(lambda d: d.to(ember.float32))

    def detach(self):
        return self._apply_data(lambda d: d.detach())

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    """The inverse of a permutation given as an int64 tensor (None stays None)."""
    if permutation is None:
        return None
    out = ember.empty_like(permutation)
    out.scatter_(0, permutation, ember.arange(permutation.numel(), device=permutation.device))
    return out


def _lengths_list(lengths):
    if isinstance(lengths, ember.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D tensor, got {lengths.dim()}D")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Packs a padded batch of variable-length sequences (torch.nn.utils.rnn.pack_padded_sequence).

    ``input`` is ``T x B x *`` (``B x T x *`` with ``batch_first``); ``lengths`` the
    length of each sequence. With ``enforce_sorted`` the lengths must be
    non-increasing; otherwise the batch is sorted here and the permutation kept
    in the result so that unpacking restores the order.
    """
    lens = _lengths_list(lengths)
    sorted_indices = None
    if not enforce_sorted:
        lt = ember.tensor(lens, dtype=ember.int64)
        lt, sorted_indices = ember.sort(lt, descending=True, stable=True)
        lens = [int(v) for v in lt.tolist()]
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _C._pack_padded_sequence(input, lens, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: Optional[int] = None):
    """Unpacks a PackedSequence into a padded batch and the lengths
    (torch.nn.utils.rnn.pad_packed_sequence)."""
    batch_sizes = sequence.batch_sizes
    max_seq_length = batch_sizes.numel()
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_seq_length}")
    bs = [int(v) for v in batch_sizes.tolist()]
    padded = _C._pad_packed_sequence(sequence.data, bs, batch_first, float(padding_value),
                                     int(total_length or 0))
    # lengths[b] = number of steps with more than b rows
    lengths = (batch_sizes.unsqueeze(1) > ember.arange(bs[0]).unsqueeze(0)).sum(0)
    if sequence.unsorted_indices is not None:
        bdim = 0 if batch_first else 1
        padded = padded.index_select(bdim, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices.to("cpu"))
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right"):
    """Pads a list of ``L_i x *`` tensors to ``max(L) x B x *`` (``B x max(L) x *``
    with ``batch_first``), as torch.nn.utils.rnn.pad_sequence."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, ember.Tensor):
        sequences = list(sequences.unbind(0))
    return _C._pad_sequence(list(sequences), batch_first, float(padding_value),
                            padding_side == "left")


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list:
    """The list of sequences that pad_sequence padded (views of the padded batch)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lens = _lengths_list(lengths)
    return [padded_sequences[i, :n] for i, n in enumerate(lens)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of variable-length tensors (torch.nn.utils.rnn.pack_sequence)."""
    lengths = [int(s.size(0)) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a PackedSequence holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
