"""Channels between two jails graded at once through the network namespace: what a socket names lives in its
namespace (an abstract unix name, a TCP or UDP port, the lists in /proc/self/net), so two jails that shared one
could hand each other bits, or whole hidden inputs, whatever the filter lets them make. A jail may make AF_UNIX,
AF_INET(6) and netlink sockets and bind them (an empty namespace of its own: nothing to reach). Two sandboxes of
one zygote (one worker: the next notebook's load runs beside the current one's hidden cases) run at once here: one
holds an abstract unix name (stream and datagram), a TCP and a UDP port of every address family; the other looks
for them every 20 ms for as long as both run (connect, bind the same name or port, read /proc/self/net) and must
find none. Real sandboxes, jail mode (rlimits mode shares the host's namespace: README "Without user namespaces").
"""

from __future__ import annotations

import random
import secrets
import threading
import time

import pytest

from grader import codec
from grader.sandbox.isolation import detect
from grader.sandbox import supervisor
from grader.sandbox.process import CaseRequest
from sandbox_run import run_cases, statement

pytestmark = pytest.mark.skipif(not detect().namespaces, reason="no user namespaces here: no jail to share one")

SOCKETS = r'''
import errno, os, socket, time

def _named(token, port):
    return [("abstract stream", socket.AF_UNIX, socket.SOCK_STREAM, b"\0rt-stream-" + token.encode()),
            ("abstract datagram", socket.AF_UNIX, socket.SOCK_DGRAM, b"\0rt-dgram-" + token.encode()),
            ("tcp", socket.AF_INET, socket.SOCK_STREAM, ("0.0.0.0", port)),
            ("udp", socket.AF_INET, socket.SOCK_DGRAM, ("0.0.0.0", port)),
            ("tcp6", socket.AF_INET6, socket.SOCK_STREAM, ("::", port + 1)),
            ("udp6", socket.AF_INET6, socket.SOCK_DGRAM, ("::", port + 1))]

def hold(token, port, until):
    """Bind every name and port (again until it works: the other jail's look binds them for an instant) and keep
    them until `until` (wall clock: a jail has the host's)."""
    made, held = {}, []
    for what, family, kind, address in _named(token, port):
        while True:
            sock = socket.socket(family, kind)
            try:
                sock.bind(address)
            except OSError as error:
                sock.close()
                made[what] = error.errno
                if error.errno == errno.EADDRINUSE and time.time() < until:
                    time.sleep(0.02)
                    continue
                break
            if kind == socket.SOCK_STREAM:
                sock.listen(8)
            made[what] = "bound"
            held.append(sock)
            break
    bound = time.time()
    while time.time() < until:
        time.sleep(0.05)
    return {"bound": bound, "made": made}

def _tables():
    text = ""
    for table in ("unix", "tcp", "udp", "tcp6", "udp6"):
        try:
            with open("/proc/self/net/" + table) as listing:
                text += listing.read()
        except OSError:
            pass
    return text

def look(token, port, until):
    """What of the other jail's names this one meets, looking until `until`."""
    started, seen, rounds = time.time(), set(), 0
    hexes = (":%04X " % port, ":%04X " % (port + 1))
    while time.time() < until:
        rounds += 1
        for what, family, kind, address in _named(token, port):
            sock = socket.socket(family, kind)
            try:
                sock.bind(address)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    seen.add(what + " in use")
            finally:
                sock.close()
            if family == socket.AF_UNIX:
                sock = socket.socket(family, kind)
                sock.setblocking(False)   # the holder never accepts or reads: a full queue must not block the look
                try:
                    if kind == socket.SOCK_STREAM:
                        sock.connect(address)
                    else:
                        sock.sendto(b"x", address)
                    seen.add(what + " reached")
                except OSError:
                    pass
                finally:
                    sock.close()
        tables = _tables()
        if token in tables:
            seen.add("name listed")
        if any(h in tables for h in hexes):
            seen.add("port listed")
        time.sleep(0.02)
    return {"started": started, "seen": sorted(seen), "rounds": rounds}
'''


def _run(code: str, into: dict, key: str) -> None:
    ran = run_cases([statement(SOCKETS, kind="other")], [CaseRequest(id=f"{key}#0", code=code, timeout=90.0)],
                    allow_root=True)
    outcome = ran.outcomes[0]
    into[key] = codec.decode(outcome.value) if outcome.status == "ok" else (outcome.status, outcome.error)


def test_two_jails_at_once_share_no_socket_name_or_port():
    token, port = secrets.token_hex(8), random.randrange(20000, 60000, 2)
    # The zygote dies with the thread that started it (PR_SET_PDEATHSIG is a thread's): started by the first of
    # the two threads below, it took the other jail with it when that thread ended. This thread outlives both.
    supervisor.zygote()
    for window in (15.0, 30.0, 60.0):   # wide enough for both to run at once even on a busy machine
        until = time.time() + window
        found: dict = {}
        threads = [threading.Thread(target=_run, args=(f"{verb}({token!r}, {port}, {until!r})", found, verb))
                   for verb in ("hold", "look")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        hold, look = found["hold"], found["look"]
        assert isinstance(hold, dict) and isinstance(look, dict), found
        assert hold["made"] == dict.fromkeys(hold["made"], "bound"), hold   # each jail has every name to itself
        assert look["seen"] == [], (hold, look)
        if max(hold["bound"], look["started"]) < until - 2.0 and look["rounds"] > 10:
            return   # both ran at once for 2 s or more, and the look met nothing of the other's
    pytest.fail(f"the two jails never ran at once for 2 s ({hold}, {look})")
