"""Helpers that the course notebooks import: data, training, plots and grading checks."""
