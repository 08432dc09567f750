"""Re-judging stored history under a new judge id, and comparing two judges on the same traces."""
