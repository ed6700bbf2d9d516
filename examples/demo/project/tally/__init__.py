"""tally: small descriptive statistics."""
from .stats import mean, median, mode

__all__ = ["mean", "median", "mode"]
