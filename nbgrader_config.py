# nbgrader configuration for Kernel Ladder. The settings live in grader/notebooks/settings.py so that
# `ladder release`, `ladder check` and `ladder grade` use the very same ones.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grader.notebooks.settings import configure_nbgrader  # noqa: E402

c = get_config()  # noqa: F821 (defined by nbgrader when it loads this file)
configure_nbgrader(c, root=os.path.dirname(os.path.abspath(__file__)))
