"""Grading a class: one student per GPU, on Dask when there are several (README, "Grading a class, in brief")."""
