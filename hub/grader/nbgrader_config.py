"""nbgrader's settings for formgrader on the hub, beside the course folder's own nbgrader_config.py.

The course folder's configuration (the course id, the trusted grader, the confinement) is read from
the folder formgrader serves; this file adds only where the exchange is (ATTENTION_EXCHANGE, set by
hub/course_config.py).
"""

import os

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.Exchange.root = os.environ.get("ATTENTION_EXCHANGE") or "/srv/nbgrader/exchange"
