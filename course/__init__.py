"""Tools that build, check and grade the course (Makefile and tests; never imported by students)."""
