"""Helpers that the course notebooks import: data, training, plots, display, memory, checks."""
