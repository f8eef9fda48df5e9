"""`make bench`: timings of the notebooks, of grading, and each lesson's figures.

`report` prints every figure (``python -m course.bench``); `cli` is the command line each lesson
benchmark shares (``python -m course.bench.seq2seq`` and the others). Imports any other package
of `course`; nothing imports it.
"""
