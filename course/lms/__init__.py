"""Canvas, Moodle and Blackboard: their export formats (`formats`) and collecting an export.

Imports `course.build`, and `course.grading` (feedback, pages, output limits) for the feedback
it sends back.
"""
