"""nn modules: rnn (RNN, LSTM, GRU and their cells), as torch.nn.

Parameters use PyTorch's names and layout (weight_ih_l{k}[_reverse],
weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}, weight_hr_l{k} with proj_size;
gates concatenated in PyTorch's order: LSTM i,f,g,o, GRU r,z,n), so state
dicts load either way. The forward is ``nn/_functional/rnn.py`` over the C++
time loop.
"""
import math
import numbers
import warnings

import ember

from .._functional import rnn as _frnn
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _init_uniform(params, hidden_size):
    stdv = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
    with ember.no_grad():
        for w in params:
            w.uniform_(-stdv, stdv)


class RNNBase(Module):
    """Base class of RNN, LSTM and GRU (torch.nn.RNNBase)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout) if isinstance(dropout, numbers.Number) else dropout
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode == "LSTM":
            gate_size = 4 * hidden_size
        elif mode == "GRU":
            gate_size = 3 * hidden_size
        elif mode in ("RNN_TANH", "RNN_RELU"):
            gate_size = hidden_size
        else:
            raise ValueError("Unrecognized RNN mode: " + mode)
        if proj_size > 0 and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        kw = {"device": device, "dtype": dtype if dtype is not None else ember.get_default_dtype()}
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                w_ih = Parameter(ember.empty((gate_size, layer_input), **kw))
                w_hh = Parameter(ember.empty((gate_size, real_hidden), **kw))
                b_ih = Parameter(ember.empty((gate_size,), **kw))
                b_hh = Parameter(ember.empty((gate_size,), **kw))
                if proj_size == 0:
                    layer_params = (w_ih, w_hh, b_ih, b_hh) if bias else (w_ih, w_hh)
                else:
                    w_hr = Parameter(ember.empty((proj_size, hidden_size), **kw))
                    layer_params = (w_ih, w_hh, b_ih, b_hh, w_hr) if bias else (w_ih, w_hh, w_hr)
                suffix = "_reverse" if direction == 1 else ""
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    names += ["weight_hr_l{}{}"]
                names = [n.format(layer, suffix) for n in names]
                for name, param in zip(names, layer_params):
                    setattr(self, name, param)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, w) for w in ws] for ws in self._all_weights]

    def flatten_parameters(self):
        """Kept for API compatibility: ember's weights need no flattening."""

    def reset_parameters(self):
        _init_uniform(self.parameters(), self.hidden_size)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def forward(self, input, hx=None):
        return _frnn.rnn_forward(
            self.mode, input, hx, self._flat_weights, input_size=self.input_size,
            hidden_size=self.hidden_size, num_layers=self.num_layers, bias=self.bias,
            batch_first=self.batch_first, dropout=self.dropout, training=self.training,
            bidirectional=self.bidirectional, proj_size=self.proj_size)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory, with optional projections (proj_size)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit; n_t = tanh(W_in x + b_in + r_t * (W_hn h + b_hn))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)


class RNNCellBase(Module):
    """Base class of the cells (torch.nn.RNNCellBase)."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        kw = {"device": device, "dtype": dtype if dtype is not None else ember.get_default_dtype()}
        self.weight_ih = Parameter(ember.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(ember.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(ember.empty((num_chunks * hidden_size,), **kw))
            self.bias_hh = Parameter(ember.empty((num_chunks * hidden_size,), **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        _init_uniform(self.parameters(), self.hidden_size)

    def _cell(self, mode, name, input, hx):
        return _frnn.rnn_cell_forward(mode, name, input, hx, self.weight_ih, self.weight_hh,
                                      self.bias_ih, self.bias_hh, self.hidden_size)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._cell(mode, "RNNCell", input, hx)


class LSTMCell(RNNCellBase):
    """One step of an LSTM: returns (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._cell("LSTM", "LSTMCell", input, hx)


class GRUCell(RNNCellBase):
    """One step of a GRU."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._cell("GRU", "GRUCell", input, hx)
