"""CLI commands that live in their own modules (each imports its library code inside the command body)."""
