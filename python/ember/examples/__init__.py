"""Runnable example programs (`python -m ember.examples.<name>`)."""
