"""PreCoMem reference memory engine."""
