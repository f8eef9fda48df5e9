"""What runs the course's checks outside pytest, from the repository root (never installed).

edges: ``make test-edges``, the stored notebooks in new environments at the edges the course
claims. It imports the course folder's modules (course.coursedir), nothing else of the course.
"""
