"""nbgrader's settings in a student's server on the hub: the course and the exchange.

The student's Assignments tab lists what the instructor released to this course's exchange, and
submits back to it. ATTENTION_EXCHANGE and ATTENTION_COURSE_ID are set by hub/course_config.py.
"""

import os

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = os.environ.get("ATTENTION_COURSE_ID") or "attention-course"
c.Exchange.root = os.environ.get("ATTENTION_EXCHANGE") or "/srv/nbgrader/exchange"
