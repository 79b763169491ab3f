"""nn.Parameter."""
