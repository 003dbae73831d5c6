"""Building the course (never released to students): the manifest and its schema, the cases, the
instructor's solutions, the editions, the releases, the student folder and the stored outputs."""
