import sys

from .stats import mean, median, mode


def main(argv):
    try:
        xs = [float(a) for a in argv]
    except ValueError as e:
        print(f"tally: {e}", file=sys.stderr)
        return 2
    if not xs:
        print("usage: python3 -m tally NUMBER...", file=sys.stderr)
        return 2
    print(f"count  {len(xs)}")
    print(f"mean   {mean(xs):g}")
    print(f"median {median(xs):g}")
    print(f"mode   {mode(xs):g}")
    return 0


sys.exit(main(sys.argv[1:]))
