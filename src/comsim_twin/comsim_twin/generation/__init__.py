"""Rule-based episode generation in the twin: randomise, run a task program, check, record."""
