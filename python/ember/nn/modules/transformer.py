"""nn modules: transformer (MultiheadAttention, the encoder and decoder layers and stacks,
and the full encoder-decoder Transformer), as torch.nn, over F.scaled_dot_product_attention's
fused C++ kernel."""
import copy

import ember

from ..._errors import ArgumentAssertionError
from .. import functional as F
from .._functional.attention import multi_head_attention_forward
from ..parameter import Parameter
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear, NonDynamicallyQuantizableLinear
from .module import Module
from .normalization import LayerNorm

__all__ = ["MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
           "TransformerEncoderLayer", "TransformerDecoderLayer"]


def _xavier_uniform_(w):
    import math
    fan_out, fan_in = w.shape[0], w.shape[1]
    a = math.sqrt(6.0 / (fan_in + fan_out))
    with ember.no_grad():
        w.uniform_(-a, a)


class MultiheadAttention(Module):
    """Multi-head attention (torch.nn.MultiheadAttention): parameters in_proj_weight
    [3E, E] (or q/k/v_proj_weight when kdim/vdim differ from embed_dim),
    in_proj_bias [3E], out_proj (Linear), optional bias_k/bias_v."""

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        kw = {"device": device, "dtype": dtype if dtype is not None else ember.get_default_dtype()}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ArgumentAssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(ember.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(ember.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(ember.empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(ember.empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(ember.empty((3 * embed_dim,), **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(ember.empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(ember.empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            _xavier_uniform_(self.in_proj_weight)
        else:
            _xavier_uniform_(self.q_proj_weight)
            _xavier_uniform_(self.k_proj_weight)
            _xavier_uniform_(self.v_proj_weight)
        with ember.no_grad():
            if self.in_proj_bias is not None:
                self.in_proj_bias.zero_()
                if self.out_proj.bias is not None:
                    self.out_proj.bias.zero_()
            for b in (self.bias_k, self.bias_v):
                if b is not None:
                    b.normal_(0.0, (2.0 / (1 + self.embed_dim)) ** 0.5)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        is_batched = query.dim() == 3
        if self.batch_first and is_batched:
            query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
            is_causal=is_causal)
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, weights


def _activation(name):
    if name == "relu":
        return F.relu
    if name == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {name}")


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual connection and
    LayerNorm (after, or before with norm_first), as torch.nn.TransformerEncoderLayer."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation) if isinstance(activation, str) else activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """A stack of num_layers copies of encoder_layer, then the optional norm."""

    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        # ember has no nested tensors: the flag is kept for the API, the fast path is never taken.
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        batch_first = getattr(getattr(self.layers[0], "self_attn", None), "batch_first", False)
        is_causal = _detect_is_causal_mask(mask, is_causal, _get_seq_len(src, batch_first))
        out = src
        for mod in self.layers:
            out = mod(out, src_mask=mask, is_causal=is_causal,
                      src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            out = self.norm(out)
        return out


class TransformerDecoderLayer(Module):
    """Masked self-attention, attention over the encoder's memory, and a feed-forward block,
    each with a residual connection and LayerNorm (after, or before with norm_first), as
    torch.nn.TransformerDecoderLayer."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation) if isinstance(activation, str) else activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    """A stack of num_layers copies of decoder_layer over the same memory, then the optional
    norm."""

    __constants__ = ["norm"]

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        out = tgt
        batch_first = getattr(getattr(self.layers[0], "self_attn", None), "batch_first", False)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal,
                                               _get_seq_len(tgt, batch_first))
        for mod in self.layers:
            out = mod(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need", as
    torch.nn.Transformer: an encoder stack over ``src`` and a decoder stack over ``tgt``
    attending to the encoder's output; matrices are xavier_uniform-initialized."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        is_batched = src.dim() == 3
        if is_batched and src.size(0 if self.batch_first else 1) != tgt.size(
                0 if self.batch_first else 1):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The causal mask of a length-``sz`` sequence: -inf above the diagonal, 0 on and
        below it (float32 on the CPU unless told)."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                _xavier_uniform_(p)


def _get_clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    if device is None:
        device = ember.device("cpu")
    if dtype is None:
        dtype = ember.float32
    return ember.triu(ember.full((sz, sz), float("-inf"), dtype=dtype, device=device),
                      diagonal=1)


def _get_seq_len(src, batch_first):
    if src.dim() == 2:  # unbatched: (S, E)
        return src.size(0)
    return src.size(1 if batch_first else 0)


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """``is_causal`` when given; else whether ``mask`` is exactly the causal mask of its
    size (so a user's causal mask gets the causal fast path, as in PyTorch)."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        make_causal = tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())
    return make_causal
