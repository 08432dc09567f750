"""ragpulse agent SDK."""
