"""Training loop and CLI (``python -m comsim_policy.training.train``)."""
