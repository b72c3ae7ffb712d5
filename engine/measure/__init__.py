"""Measure: back-calculation from a running engine, and torch micro-kernels that check the model."""
