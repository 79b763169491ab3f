"""nn.init: parameter initialization, as torch.nn.init."""
