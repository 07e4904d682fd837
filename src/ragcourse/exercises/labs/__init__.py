"""Exercise sets of Part 3 (the labs on real text): one module a lab.

Lab sets are named ``labNN-name``; their masters live in ``exercises/masters/labs/`` and their
student versions in ``notebooks/exercises/labs/``. A check here computes its reference on the
real corpus when it runs, through the same package functions the lab uses, so that nothing
it compares with depends on a number written down when the check was made.
"""
