"""The course folder: where things live, notebooks, nbgrader runs, the release and the gradebook.

Also the scratch courses and filled-in submissions that tests and benchmarks grade. Imports
nothing from the other packages of `course`.
"""
