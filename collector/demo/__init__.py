"""The demo: the runner behind ``ragpulse demo``, synthetic traffic, the quality report."""
