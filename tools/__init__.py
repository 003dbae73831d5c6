"""Development tools: the benchmark (`make bench`) and the fixture that writes classes of submissions."""
