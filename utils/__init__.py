"""Helpers that the course notebooks import: data, training, seq2seq, recipe, transformer, text,
gpt, encoder_decoder, translation, plots, interactive, display, memory, timing, validation,
grading, review (its tables in review_rules), bindings, shell, validate_findings. Students install
this package, and only this one."""
