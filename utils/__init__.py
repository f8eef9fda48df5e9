"""Helpers that the course notebooks import: data, training, seq2seq, recipe, transformer, text,
gpt, plots, interactive, display, memory, timing, validation, grading. Students install this
package, and only this one."""
