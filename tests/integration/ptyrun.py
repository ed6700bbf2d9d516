#!/usr/bin/env python3
"""ptyrun.py OUT MARKER KEY -- CMD...: run CMD on a new pseudo-terminal (its
controlling terminal, CMD in the foreground process group, as in a real
terminal), copy everything it prints to OUT, and once MARKER has appeared
type KEY ("^C" = Ctrl-C, "^\\" = Ctrl-\\) as a user would. Prints CMD's exit
status as a shell would (128+N for signal N). Gives up after 120 s
(SIGKILL, status 137) so a test never hangs."""
import os, pty, select, sys, time

out, marker, key = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
cmd = sys.argv[sys.argv.index("--") + 1:]
keys = {"^C": b"\x03", "^\\": b"\x1c"}
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
buf, sent, deadline = b"", False, time.time() + 120
with open(out, "wb") as f:
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                d = os.read(fd, 65536)
            except OSError:
                break
            if not d:
                break
            buf += d
            f.write(d)
            f.flush()
        if not sent and marker in buf:
            os.write(fd, keys.get(key, key.encode()))
            sent = True
    else:
        os.kill(pid, 9)
_, st = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))
