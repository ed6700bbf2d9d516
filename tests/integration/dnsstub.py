#!/usr/bin/env python3
"""A tiny DNS stub for the proxy tests (loopback only, UDP).

usage: dnsstub.py PORTFILE LOGFILE NAME=ADDR[,ADDR...] ...

Binds 127.0.0.1 on a free port and writes the port to PORTFILE. Every
query is appended to LOGFILE as "NAME TYPE". A and AAAA questions for a
listed NAME are answered with the listed addresses of that family (NOERROR
with no answer when none); any other name gets NXDOMAIN. No recursion, no
outside traffic.
"""
import ipaddress
import socket
import struct
import sys


def parse_name(msg, off):
    labels = []
    while True:
        n = msg[off]
        off += 1
        if n == 0:
            break
        if n & 0xC0:
            raise ValueError("compression in question")
        labels.append(msg[off:off + n].decode("ascii", "replace"))
        off += n
    return ".".join(labels).lower(), off


def main():
    portfile, logfile = sys.argv[1], sys.argv[2]
    table = {}
    for spec in sys.argv[3:]:
        name, addrs = spec.split("=", 1)
        table[name.lower().rstrip(".")] = [ipaddress.ip_address(a) for a in addrs.split(",") if a]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    with open(portfile + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(portfile + ".tmp", portfile)
    log = open(logfile, "a", buffering=1)
    while True:
        msg, peer = s.recvfrom(4096)
        try:
            qid, flags, qd = struct.unpack("!HHH", msg[:6])
            name, off = parse_name(msg, 12)
            qtype, qclass = struct.unpack("!HH", msg[off:off + 4])
        except Exception:
            continue
        question = msg[12:off + 4]
        log.write("%s %s\n" % (name, {1: "A", 28: "AAAA"}.get(qtype, str(qtype))))
        answers = []
        rcode = 3
        if name in table:
            rcode = 0
            for a in table[name]:
                if qtype == 1 and a.version == 4:
                    answers.append(struct.pack("!HHHIH", 0xC00C, 1, 1, 5, 4) + a.packed)
                elif qtype == 28 and a.version == 6:
                    answers.append(struct.pack("!HHHIH", 0xC00C, 28, 1, 5, 16) + a.packed)
        hdr = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, len(answers), 0, 0)
        s.sendto(hdr + question + b"".join(answers), peer)


if __name__ == "__main__":
    main()
