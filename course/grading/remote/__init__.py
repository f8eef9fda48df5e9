"""The conversation between the grader and a student's kernel, both of its ends.

`client` is the grader's end (requests, and proxies for the student's names); `agent` runs in the
kernel and answers them; `wire` is the value format both use, decoded against a budget. `client`
imports `channels` and `wire`; `agent` and `wire` are sent to the kernel as source and import
nothing of the course.
"""
