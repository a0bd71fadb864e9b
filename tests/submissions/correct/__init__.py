"""Correct submissions written independently of the instructor's: several designs per graded exercise.

Each module names one exercise's solution cells (CELLS) and what the grader must decide (EXPECT):
every graded test cell of that exercise passes. README.md tables the designs and their margins.
"""
