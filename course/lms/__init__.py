"""The round trip through Canvas, Moodle and Blackboard: every file read from or sent to an LMS.

`names` (the export's file names), `roster` (roster.csv), `collect` (the export into
submitted/), `gradebook_csv` (the LMS's gradebook CSV with a lab's scores), `feedback_zip`
(the feedback zip Canvas and Moodle hand out), `launches` (the record of LTI launches the hub
writes and the grades read) and `lti` (grades sent over LTI 1.3). Imports
`course.coursedir`, and `course.grading` (feedback, pages, output limits) for the feedback it
sends back; never `course.instructor`.
"""
