"""Canvas, Moodle and Blackboard: their export formats (`formats`) and collecting an export.

Imports `course.build`, and `course.grading.feedback` for the feedback it sends back.
"""
