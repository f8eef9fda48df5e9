"""Helpers that the course notebooks import: data, training, seq2seq, transformer, plots, display,
memory, checks."""
