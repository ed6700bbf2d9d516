"""Descriptive statistics over a list of numbers."""


def mean(xs):
    """Arithmetic mean. Raises ValueError on an empty list."""
    if not xs:
        raise ValueError("mean of an empty list")
    return sum(xs) / len(xs)


def median(xs):
    """Middle value of the sorted list; for an even count, the mean of the
    two middle values. Raises ValueError on an empty list."""
    if not xs:
        raise ValueError("median of an empty list")
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid]


def mode(xs):
    """Most frequent value; the smallest one on a tie."""
    if not xs:
        raise ValueError("mode of an empty list")
    counts = {}
    for x in xs:
        counts[x] = counts.get(x, 0) + 1
    best = max(counts.values())
    return min(x for x, c in counts.items() if c == best)
