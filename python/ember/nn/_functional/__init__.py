"""Functional ops, one module per family (re-exported by ember.nn.functional)."""
