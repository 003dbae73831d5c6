"""The course's trusted grading tools (never released to students).

They read the reference solutions from the instructor notebooks in `source/attention`, build
the test cases with their expected results and known wrong answers, and write the case file
that the released checks read.
"""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "source" / "attention"

if str(SOURCE) not in sys.path:  # the course's helper package lives next to the notebooks
    sys.path.insert(0, str(SOURCE))
