"""The zygote: a clean interpreter that forks one jailed child per submission, so a sandbox costs a fork.

Started by the grader as `python -s -S -P zygote.py CONTROL_FD GRADER_PID TEMP_DIR` with an environment of its own.
It never imports `grader` or a reference: it preloads the runtime (with codec, wire and confine), numpy's core once a
spawn request asks for it (see preload), and waits for
spawn requests on a SOCK_SEQPACKET socket. A request carries the child's configuration as JSON and its
descriptors (request pipe, response pipe, output file, exit-status pipe, refusals pipe); the reply carries a
pidfd of the child, so the grader can kill it without ever naming a pid that may have been reused. A keep request
moves a ready child to the worker's CPUs (Zygote.keep: a spare is started beside the worker, see process._spawn).
The exit-status pipe stays with the zygote, which writes the child's status there once it has reaped it, and so
does the refusals pipe: the zygote answers each call the child's seccomp filter refused (a user notification, see
notified) and writes its kind there.

The chain, each link dying with the one before it (PR_SET_PDEATHSIG):

    grader -> zygote -> runtime (cloned into new namespaces: PID 1 of its pid namespace; joins the sandbox's
                                 cgroups, builds the root, then drops to no capabilities and an unprivileged
                                 uid and loads the notebook: see _init)
                          -> an exercise's fork (serving the next exercises while pristine.py finds nothing
                             of the last one left)

Without namespaces (rlimits mode) the zygote's child (`_outer`) drops to an unused uid and becomes the
runtime itself. When the grader
goes (the control socket reads EOF, or the zygote is told to stop) every child is killed, and in rlimits
mode each child's uid is swept with kill(-1) so a double-forked escapee goes too (as root: an unused uid of its
own); as the grader's uid, an escapee of a runtime that was killed comes to the zygote, the subreaper of its
children's orphans, which kills and reaps it (reap_strays). A grader that went without
its exit handlers (killed) also leaves its temp folder to the zygote to remove (remove_grader_folders).
"""

import errno
import fcntl
import functools
import gc
import json
import operator
import os
import select
import signal
import socket
import sys
import time

# The .pth file an editable install of this package (setuptools') puts in site-packages: it imports a finder for
# `grader`, and with it pathlib, fnmatch, re, enum and importlib.util, in every interpreter of the environment.
OWN_EDITABLE = "__editable__.puzzle_grader-"


def start_site():
    """What `site` does at an interpreter's start (the zygote is started with -S: supervisor.Zygote), but the .pth of
    an editable install of this package (OWN_EDITABLE). The zygote never imports `grader` (it loads its modules by
    path) and neither does any child (a jail has no grader source to import): the finder only added 8 modules and
    ~750 kB to the memory every clone and fork copies and every exit frees. Everything else is as at a normal
    start: sys.path and every other .pth (other editable packages, namespace packages), builtins' exit, quit and
    help, sitecustomize."""
    import site
    add = site.addpackage

    def addpackage(sitedir, name, known_paths):
        if name.startswith(OWN_EDITABLE) and name.endswith(".pth"):
            return known_paths
        return add(sitedir, name, known_paths)

    site.addpackage = addpackage
    try:
        site.main()
    finally:
        site.addpackage = add


_HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":   # run as a script with -P: load our modules, then take the folder off sys.path
    if sys.flags.no_site:
        start_site()
    sys.path.insert(0, _HERE)
    import confine  # noqa: E402
    if sys.argv[1:] != ["--probe"]:   # the probe only tries the jail: the runtime's imports (~45 ms of CPU) wait
        import runtime  # noqa: E402
    sys.path.remove(_HERE)
    for _name in ("codec", "wire", "confine", "pristine", "runtime"):
        sys.modules.pop(_name, None)
else:
    from grader.sandbox import confine, runtime

MAX_MESSAGE = 1 << 20
# What a spawn request may ask the zygote to import first (its "preload"), when installed, so a notebook that
# imports them pays nothing (each child is a fork). Only on request: numpy's mappings make every fork of the
# chain and every exit dearer (about 0.35 ms each, 5-7 ms of CPU per submission that never imports it). heapq
# (every A* of these courses imports it) cost each sandbox 1.5 ms of CPU and ~320 copied pages to import.
PRELOAD = ("numpy", "heapq")
# How often the zygote looks at the size of each rlimits-mode scratch (Zygote.watch): a host folder bounded per file
# only, where a load wrote 2.3 GB of 64 MB files in 6 s. What a sandbox can write past its limit is what it writes
# between two looks.
WATCH_SECONDS = 0.1
# A sandbox's refused calls the zygote answers and reports (Zygote.notified) before it closes the listener: past it
# the kernel answers them itself (ENOSYS), and a loop of refused calls costs the zygote, which serves every sandbox
# of its worker, nothing more. The count the grader reads stops there; an incident is an incident.
MAX_NOTIFIED = 64
# Where the zygote answers a sandbox's signals too (rlimits mode as the grader's uid, confine._SIGNAL_CALLS), its own
# sweeps and kills wait for these answers: no listener let go there, the sandbox is killed instead when it reaches
# MAX_NOTIFIED refusals, or this many signals let through (a kill loop of its own processes costs the zygote a round
# trip each; honest code sends a few: a pool's terminate, the runtime's sweep after each exercise's fork).
MAX_SIGNALS = 4096
UNLINKED_LOOKS = 5       # every 0.5 s, the files a sandbox unlinked and holds open (confine.held_unlinked)


def _address_space():
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def preload(modules=PRELOAD):
    """Import `modules` (those installed) and return the bytes of address space they added.

    What a fork shares is this process's memory as it is now, copied on write: nothing a child changes reaches
    another child, so what matters is only what the import leaves in memory. numpy's core holds no secret and
    no student's data (the zygote never runs student code), opens no descriptor it keeps and starts no thread
    (OPENBLAS_NUM_THREADS=1 and the like are in the zygote's environment). numpy.random is not imported
    (numpy imports it lazily): its global generator, seeded from the OS when it is imported, would otherwise
    be the same in every child. Every child's RLIMIT_AS is raised by the returned size, so the preload does
    not come out of the student's memory limit."""
    before = _address_space()
    for name in modules:
        loaded = set(sys.modules)
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - not installed, or broken: the child imports it itself, as before
            for partial in set(sys.modules) - loaded:
                del sys.modules[partial]
    return max(0, _address_space() - before)


def trim():
    """Give the heap's free pages back to the kernel (glibc's malloc_trim; elsewhere nothing), once what every
    child starts from is made. Where the zygote compiled its modules (no bytecode written: PYTHONDONTWRITEBYTECODE,
    a folder it may not write), the compiler's freed memory stayed in its heap, 2.7 of its 14.6 MB of anonymous
    memory: every clone copied its page-table entries, every exit zapped them, and a child's malloc wrote into
    it by copy-on-write faults. Trimmed, it is unmapped (11.8 MB, as with bytecode). Frees only memory no object
    holds: nothing a child sees changes."""
    try:
        trim_heap = confine._libc.malloc_trim
    except AttributeError:   # not glibc (musl): the heap stays as it is
        return
    trim_heap(0)


def _status_bytes(status, over=0):
    """What the status pipe carries: the exit code (negative: the signal that ended it) and why the zygote killed
    it (1 + the index of confine.OVER_LIMIT; 0: it did not)."""
    return int(status).to_bytes(4, "big", signed=True) + bytes([over])


def _enter_groups(config):
    """Move this process into the sandbox's pids, memory and CPU groups, before it has any child: everything the
    sandbox starts is counted and bounded there. ("0" is the writer itself, whatever pid namespace it is in.)"""
    procs = config.get("cgroup_procs") or []
    for path in [procs] if isinstance(procs, str) else procs:
        try:
            confine.write_small(path, b"0")
        except OSError:
            pass


def _trees(config):
    """The host trees the child may read: the interpreter's (resolved once, in the zygote) and what the config
    adds. Without additions nothing is resolved again in the child (a realpath of every tree: ~0.2 ms a start)."""
    extra = config.get("allow") or ()
    return list(confine.python_trees()) if not extra else confine.allowlist(confine.python_trees(), extra)


def _keep_to(cpus):
    """Keep the new child to the CPUs the worker asking for it keeps to (process._cpus), before it runs or
    forks anything: a worker pinned to one CPU and its sandbox on another paid for every frame between them in
    wake-ups of an idle CPU. Nothing asked, or a CPU gone: the zygote's own, as before."""
    if isinstance(cpus, list) and cpus and all(type(cpu) is int for cpu in cpus):
        try:
            os.sched_setaffinity(0, cpus)
        except (OSError, ValueError):
            pass


def _take_output(output_fd):
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(output_fd)


def _outer(config, request_fd, response_fd, output_fd, status_fd, handoff=None):
    """The child without namespaces (rlimits mode), which becomes the runtime itself: never returns."""
    code = 70
    try:
        os.setsid()
        zygote = os.getppid()
        _take_output(output_fd)
        _enter_groups(config)
        facts = {"namespaces": [], "grader_uid": config.get("grader_uid")}
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        root = os.geteuid() == 0
        unique = confine.UID_BASE + os.getpid() if root else os.geteuid()
        facts["host_uid"] = os.geteuid()     # what the student runs as: set from the kernel, never assumed
        scratch = config.get("scratch")
        unreadable = [tree for tree in confine.python_trees() if not confine.readable_by_anyone(tree)]
        if root and unreadable:   # an unused uid could not even import the standard library
            facts["root_because"] = f"{unreadable[0]} is not readable by an unprivileged uid"
        else:
            if scratch and root:
                confine.hand_over(scratch, unique)
            facts["host_uid"] = confine.drop_privileges(unique, unique)
        confine.die_with_parent()
        if os.getppid() != zygote:
            os._exit(code)
        confine.prctl(confine.PR_SET_DUMPABLE, 0)
        os.close(status_fd)
        try:   # no built root here: Landlock keeps the file system to the same allowlist where it can
            trees = _trees(config)
            abi = confine.landlock(*confine.landlock_paths(trees, config.get("scratch")))
            facts["filesystem"] = "landlock" if abi else "none"
            facts["landlock"] = abi
        except OSError as error:
            facts["filesystem"], facts["landlock_error"] = "none", str(error)[:300]
        try:   # as _init; kill(-1) and sockets only where the uid is the sandbox's own (else they reach the grader's)
            own_uid = os.getuid() == os.geteuid() >= confine.UID_BASE
            protected = [pid for pid in config.get("protect") or () if type(pid) is int][:40] + [zygote, -zygote]
            # network=False: the host's network namespace is shared here (no socket() but AF_UNIX, confine._SOCKET)
            facts["scheduling"] = "kept" if confine.keep_scheduling(own_uid, protected, network=False,
                                                                     handoff=handoff) else "free"
        except OSError as error:
            facts["scheduling"] = f"free: {str(error)[:200]}"
        if handoff is not None:   # closed before any student code, whatever happened above
            handoff.close()
        runtime.start(request_fd, response_fd, config, facts, jailed=False)
        os._exit(0)
    except BaseException as error:  # noqa: BLE001 - whatever went wrong, this process must end here
        try:
            os.write(2, f"sandbox start failed: {type(error).__name__}: {error}\n".encode())
        except OSError:
            pass
    os._exit(code)   # as _init ends a failed start: 70 (EX_SOFTWARE), never a status that reads as a clean exit


def _init(config, request_fd, response_fd, output_fd, zygote, uid, gid, handoff=None, prepared=None):
    """The jail's one process before any fork, cloned by the zygote straight into its namespaces
    (confine.clone_namespaces): PID 1 of the sandbox's pid namespace. Moves into the sandbox's cgroups, builds
    the root, gives up every privilege and becomes the runtime; never returns. `uid`/`gid`: the zygote's, which
    the student's id maps to (root: this process becomes an unused uid instead). `prepared`: the folder of the
    root the zygote prepared (Zygote.prepare), which this child's copy of its mounts holds; None: built whole.

    Why the runtime is PID 1 itself and no init waits above it: a second process per sandbox cost a fork, an
    exit and the pages both copied (about 2 ms of CPU a start). What an init did is done here or by the kernel:
    the runtime is the reaper of the exercises' orphans anyway (its sweep kills and reaps them between
    exercises), and its end ends the namespace and everything in it. The zygote, its parent, reports its exit
    status. As PID 1 it takes no signal from inside the namespace that it does not handle, so a student's
    process can no longer kill the runtime (it could kill the old one, PID 2, and cost a restart): only the
    kernel (memory, CPU limits) and the grader outside can."""
    try:
        confine.die_with_parent()
        if confine.host_parent() != zygote:   # the zygote went before the line above could see it go
            os._exit(70)
        os.setsid()
        _take_output(output_fd)
        _enter_groups(config)
        root = uid == 0
        # Real root builds the jail with its own powers and the student enters a user namespace last; anyone
        # else builds it as root of the new user namespace.
        facts = {"namespaces": confine.finish_namespaces(uid, gid, user=not root),
                 "grader_uid": config.get("grader_uid"), "host_uid": uid}
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        confine.prctl(confine.PR_SET_DUMPABLE, 0)
        drop_to = confine.UID_BASE + confine.host_pid() if root else None   # unique while this process lives
        if drop_to is not None:
            facts["host_uid"] = drop_to
        trees = _trees(config)
        owner = drop_to if drop_to is not None else confine.STUDENT_ID
        cover = [*config.get("cover", ()), *confine.unrelated_site_packages()]
        if prepared and not config.get("allow"):   # the zygote's prepared root holds the interpreter's trees only
            confine.enter_root(prepared, trees, config["scratch_bytes"], config["scratch_files"], cover, owner)
        else:
            confine.build_root(trees, config["scratch_bytes"], config["scratch_files"], cover, owner)
        facts["filesystem"] = "allowlist"
        try:
            socket.sethostname("sandbox")
        except OSError:
            pass
        if drop_to is None:
            confine.forbid_user_namespaces()
        else:
            confine.drop_privileges(drop_to, drop_to)
            confine.enter_student_namespace()
            facts["namespaces"] = ["user", *facts["namespaces"]]
        confine.drop_capabilities()
        confine.die_with_parent()
        facts["capabilities"] = confine.capabilities_effective()
        try:   # the student's threads keep the priority, policy and CPUs given (the busy machine's credit)
            facts["scheduling"] = "kept" if confine.keep_scheduling(handoff=handoff) else "free"
        except OSError as error:
            facts["scheduling"] = f"free: {str(error)[:200]}"
        if handoff is not None:   # closed before any student code, whatever happened above
            handoff.close()
        confine.forget_sysctl()   # the covered procfs's /proc/sys (forbid_user_namespaces closed it already)
        runtime.start(request_fd, response_fd, config, facts, jailed=True)
    except BaseException as error:  # noqa: BLE001 - whatever went wrong, this process must end here
        try:
            os.write(2, f"sandbox start failed: {type(error).__name__}: {error}\n".encode())
        except OSError:
            pass
    os._exit(70)


class _Listening:
    """A sandbox's seccomp listener as the zygote reads it: whose it is and what it answered so far."""

    __slots__ = ("pidfd", "answers_signals", "refused", "let_through")

    def __init__(self, pidfd, answers_signals):
        self.pidfd = pidfd                        # its child's
        self.answers_signals = answers_signals    # the zygote answers its signals too (confine.ANSWERS_SIGNALS)
        self.refused = 0                          # calls refused (reported to the grader)
        self.let_through = 0                      # signals let through (to the sandbox's own processes)


class Zygote:
    def __init__(self, control, preloaded=0, folder=""):
        self.control = control
        self.folder = folder     # where the grader's temp folders are (its prepared root's goes there too)
        # The folder of the root prepared for its jails (prepare): None until the first jail asks, "" where none was.
        self.prepared = None
        # pidfd -> (pid, host uid swept when it ends or None, its exit-status pipe, its refusals' pipe)
        self.children = {}
        self.handoffs = {}       # fd -> (the socket a child sends its seccomp listener on, its pidfd)
        self.listeners = {}      # listener fd -> _Listening
        self.parked = {}         # listener fd -> its child's pidfd: a sandbox ended at MAX_SIGNALS, not read any more
        self.over = {}           # pidfd -> why watch killed it (1 + an index of confine.OVER_LIMIT)
        self.preloaded = preloaded   # bytes of address space the preloaded modules take in every child
        self.asked = set()       # modules of PRELOAD a request asked for (imported, or found missing), once each
        # pidfd -> (rlimits-mode scratch folder, its bytes, its entries, the runtime's pid, its cgroup.procs or
        # None, the unused uid or None, the WORLD_WRITABLE folders its uid may write or ()): see watch
        self.scratches = {}
        self.next_watch = 0.0
        self.looks = 0
        self.landlock_abi = None
        self.elsewhere = {}      # pidfd -> WORLD_WRITABLE, for a sandbox whose unused uid Landlock does not keep there
        self.strays = False      # a process this zygote never started came to it (see reap_strays) and is not reaped

    def preload(self, wanted):
        """Import what a request asks for of PRELOAD that is not loaded yet, and freeze it like the rest. One
        way: once loaded, every later child has it too (a zygote serves one worker, so one course). The zygote
        still never ran anything of a student: the list comes from the grader, and only PRELOAD's names count."""
        new = [name for name in PRELOAD if name in wanted and name not in self.asked]
        if new:
            self.asked.update(new)
            self.preloaded += preload(new)
            gc.freeze()
            trim()

    def prepare(self):
        """The folder of the part of a jail's root that is the same for all this zygote's sandboxes, made at its
        first jail (confine.prepare_root), or "" where it cannot be (not real root: a jail is then built whole in
        each child, as before). The folder is named like a grader's temp folders, by the zygote's own pid (a
        killed zygote's is swept by the next grader process's clean_leftovers, as a dead grader's folder is), and
        made like mkdtemp (a fresh name, exclusively, 0700). Looked at again
        before each jail: a folder removed from the host (a clean-up of another grader's) took its mounts with it
        in this namespace too, and the jails are built whole again from then on."""
        if self.prepared is None:
            self.prepared = ""
            if os.geteuid() == 0 and self.folder:
                folder = os.path.join(self.folder, f"puzzle-grader-{os.getuid()}-{os.getpid()}-{os.urandom(6).hex()}")
                try:
                    os.mkdir(folder, 0o700)
                except OSError:
                    return ""
                try:
                    confine.prepare_root(folder, confine.python_trees())
                    self.prepared = folder
                except Exception:  # noqa: BLE001 - whatever failed, each jail is then built whole, as before
                    confine.drop_prepared_root(folder)
        elif self.prepared and not os.path.isdir(self.prepared + confine.PREPARED_ROOT + "/proc"):
            self.drop_prepared()
        return self.prepared

    def drop_prepared(self):
        if self.prepared:
            confine.drop_prepared_root(self.prepared)
        self.prepared = ""

    def _sweep(self, uid):
        """kill(-1) as `uid`: every process of that (unique, sandbox-only) uid dies, escapees included."""
        if uid is None or uid < confine.UID_BASE:
            return
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                if os.getuid() == os.geteuid() == uid >= confine.UID_BASE:   # never as anyone else
                    os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)

    def watch(self):
        """Kill each rlimits-mode sandbox whose scratch holds more than its disk_mb or files, at most every
        WATCH_SECONDS. In a jail the scratch is a tmpfs of that size, which refuses the write; in rlimits mode it
        is a folder on the host's disk, bounded per file only (RLIMIT_FSIZE), and a notebook could fill the disk
        the results are written to. The zygote never ran student code and outlives the sandbox's own clocks. Which
        count went over goes to the grader after the exit status (_ended), its word the case's error says: a
        second walk of the folder by the grader missed files held unlinked or left in WORLD_WRITABLE."""
        now = time.monotonic()
        if now < self.next_watch:
            return
        self.next_watch = now + WATCH_SECONDS
        # Files unlinked while held open, which no name reaches, every UNLINKED_LOOKS-th look: the descriptors of
        # every process of the sandbox (up to 4,096 of them) cost more than the folder's names.
        self.looks += 1
        unlinked = self.looks % UNLINKED_LOOKS == 0
        for pidfd, (path, most_bytes, most_entries, pid, procs, uid, elsewhere) in list(self.scratches.items()):
            used, entries = confine.tree_use(path, most_entries)
            over = "folder" if used > most_bytes or entries > most_entries else None
            if elsewhere and over is None:   # no Landlock: its uid writes /tmp and the like too
                more, inside = confine.owned_use(elsewhere, uid, most_entries - entries)
                used, entries = used + more, entries + inside
                over = "shared" if used > most_bytes or entries > most_entries else None
            if unlinked and over is None:
                try:
                    used += confine.held_unlinked(confine.tree_pids(pid, procs), os.lstat(path).st_dev)
                except OSError:
                    pass
                over = "unlinked" if used > most_bytes else None
            if over is not None:
                del self.scratches[pidfd]
                self.over[pidfd] = 1 + confine.OVER_LIMIT.index(over)
                try:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                except OSError:
                    pass

    def reap_strays(self):
        """Kill and reap every child of this zygote's that it did not start. The zygote is the subreaper of what its
        children leave (main): a runtime the grader killed never swept its exercises' processes, and one that left
        its session (forked twice, setsid) came here instead of to the machine's init. As root each sandbox's
        unused uid is swept anyway (_sweep), and a jail's processes end with its pid namespace; as the grader's uid
        without a pids cgroup nothing else would end it (it ran on after the grader, tests/test_hostile_survivor).
        A child's pid stays its own until this process reaps it, so the kill reaches no one else; one killed but
        not yet gone is reaped at the next look (serve looks every WATCH_SECONDS while one is left)."""
        known = {pid for pid, *_ in self.children.values()}
        try:
            with open(f"/proc/self/task/{os.getpid()}/children", "rb") as listing:
                strays = [int(pid) for pid in listing.read().split() if int(pid) not in known]
        except (OSError, ValueError):
            strays = []
        left = False
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
                left = left or os.waitpid(pid, os.WNOHANG)[0] == 0
            except ChildProcessError:
                pass
            except OSError:
                left = True
        self.strays = left or bool(strays)

    def landlock(self):
        """The kernel's Landlock ABI, read once: where it is 0 a sandbox's unused uid writes outside its scratch."""
        if self.landlock_abi is None:
            self.landlock_abi = confine.landlock_abi()
        return self.landlock_abi

    def taken(self, fd):
        """A child's seccomp listener, sent on its handoff socket before any student code ran (or nothing: a kernel
        without user notifications, a start that failed)."""
        sock, pidfd = self.handoffs.pop(fd)
        try:
            said, fds, _, _ = socket.recv_fds(sock, 16, 1)
        except OSError:
            said, fds = b"", []
        sock.close()
        for fd in fds:   # only a seccomp listener is taken (a child's start that failed sends nothing)
            try:
                listener = os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:seccomp notify"
            except OSError:
                listener = False
            if listener and pidfd in self.children and not any(seen.pidfd == pidfd for seen in self.listeners.values()):
                self.listeners[fd] = _Listening(pidfd, said == confine.ANSWERS_SIGNALS)
            else:
                os.close(fd)

    def notified(self, listener):
        """One call the sandbox's filter refused: EPERM for it, as the filter alone answers, and its kind
        (confine.REFUSED) for the grader on the refusals' pipe, written first, so it is there before the call
        returns. Read only when the listener says a notification waits (POLLIN): the kernel then never blocks the
        receive (a target killed meanwhile is ENOENT). Where the zygote answers the sandbox's signals, a signal to
        a process or group of the sandbox goes on as made (CONTINUE), one to nothing that exists is ESRCH (the
        runtime's sweep of a group its reaped fork left empty), and only the rest is refused
        (confine.signal_target)."""
        entry = self.listeners[listener]
        ready = select.poll()   # asked again: this number may be a listener taken since the events were read
        ready.register(listener, select.POLLIN)
        if not any(event & select.POLLIN for _, event in ready.poll(0)):
            return
        notice = bytearray(80)
        try:
            fcntl.ioctl(listener, confine.NOTIFY_RECV, notice, True)
        except OSError:
            return
        child = self.children.get(entry.pidfd)
        nr, arch = int.from_bytes(notice[16:20], "little", signed=True), int.from_bytes(notice[20:24], "little")
        where = "outside"
        if entry.answers_signals and child is not None and confine.signal_call(nr, arch):
            # (its first argument: the pid)
            where = confine.signal_target(child[0], int.from_bytes(notice[32:36], "little", signed=True))
        if where == "outside" and child is not None:
            try:
                os.write(child[3], bytes([confine.refused_kind(nr, arch)]))
            except OSError:
                pass
        if where == "outside":
            entry.refused += 1
        else:
            entry.let_through += 1
        if entry.answers_signals and (entry.refused >= MAX_NOTIFIED or entry.let_through >= MAX_SIGNALS):
            # Its own signals wait for this listener's answers: the sandbox ends instead. This call and any later
            # one stay unanswered (the listener is no longer read, kept until the sandbox is reaped): the caller
            # cannot go on before the runtime's end kills it (every fork of the runtime dies with it).
            self.parked[listener] = self.listeners.pop(listener).pidfd
            try:
                signal.pidfd_send_signal(entry.pidfd, signal.SIGKILL)
            except OSError:
                pass
            return
        error, flags = {"inside": (0, confine.SECCOMP_USER_NOTIF_FLAG_CONTINUE), "gone": (-errno.ESRCH, 0)}.get(
            where, (-errno.EPERM, 0))
        answer = bytearray(notice[:8] + (0).to_bytes(8, "little") + error.to_bytes(4, "little", signed=True)
                           + flags.to_bytes(4, "little"))
        try:
            fcntl.ioctl(listener, confine.NOTIFY_SEND, answer, True)
        except OSError:
            pass
        if entry.refused >= MAX_NOTIFIED:
            self._drop_listener(listener)

    def _drop_listener(self, listener):
        del self.listeners[listener]
        os.close(listener)

    def _ended(self, pidfd):
        self.scratches.pop(pidfd, None)
        elsewhere = self.elsewhere.pop(pidfd, ())
        over = self.over.pop(pidfd, 0)
        pid, uid, status_fd, seen_fd = self.children.pop(pidfd)
        for listener in [fd for fd, seen in self.listeners.items() if seen.pidfd == pidfd]:
            self._drop_listener(listener)
        for listener in [fd for fd, owner in self.parked.items() if owner == pidfd]:
            del self.parked[listener]
            os.close(listener)
        for fd in [fd for fd, (_, owner) in self.handoffs.items() if owner == pidfd]:
            self.handoffs.pop(fd)[0].close()
        os.close(seen_fd)
        os.close(pidfd)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            status = None
        # For the grader (supervisor.Jail): the runtime's exit status and why this zygote killed it, if it did. The
        # sandbox holds no end of the pipe (_init, _outer close theirs before any student code).
        if status is not None:
            try:
                os.write(status_fd, _status_bytes(os.waitstatus_to_exitcode(status), over))
            except OSError:
                pass
        os.close(status_fd)
        self._sweep(uid)
        self.reap_strays()
        if elsewhere and uid is not None:   # its processes are gone: what it left outside its scratch goes
            confine.remove_owned(elsewhere, uid)

    def spawn(self, config, fds):
        request_fd, response_fd, output_fd, status_fd, seen_fd = fds
        os.set_blocking(seen_fd, False)   # a grader that never reads it must not stop the zygote
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        wanted = config.get("preload")
        self.preload(wanted if isinstance(wanted, list) else [])
        limits = config.get("limits") or {}
        if self.preloaded and isinstance(limits.get("memory_bytes"), int):
            config = {**config, "limits": {**limits, "memory_bytes": limits["memory_bytes"] + self.preloaded}}
        jailed = bool(config.get("namespaces"))
        prepared = self.prepare() if jailed else ""
        zygote, uid, gid = os.getpid(), os.geteuid(), os.getegid()
        pid = confine.clone_namespaces(user=uid != 0) if jailed else os.fork()
        if pid == 0:
            _keep_to(config.get("cpus"))
            confine.forget_networks()
            self.control.close()
            mine.close()
            os.close(seen_fd)   # the zygote's to write: the sandbox's refusals are the kernel's word, not the child's
            for other, (_, _, other_status, other_seen) in self.children.items():   # no sandbox holds another's
                os.close(other)
                os.close(other_status)
                os.close(other_seen)
            for listener in (*self.listeners, *self.parked):   # one would let another sandbox's calls through
                os.close(listener)
            for sock, _ in self.handoffs.values():
                sock.close()
            if jailed:
                os.close(status_fd)   # the zygote's to write, once the jail has ended
                _init(config, request_fd, response_fd, output_fd, zygote, uid, gid, theirs, prepared or None)
            _outer(config, request_fd, response_fd, output_fd, status_fd, theirs)
        theirs.close()
        for fd in (request_fd, response_fd, output_fd):
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        sweep = confine.UID_BASE + pid if os.geteuid() == 0 and not jailed else None
        self.children[pidfd] = (pid, sweep, status_fd, seen_fd)
        self.handoffs[mine.fileno()] = (mine, pidfd)
        scratch, most_bytes, most_entries = (config.get(key) for key in ("scratch", "scratch_bytes", "scratch_files"))
        if not jailed and isinstance(scratch, str) and type(most_bytes) is int and type(most_entries) is int:
            procs = config.get("cgroup_procs") or []
            procs = procs if isinstance(procs, str) else next((path for path in procs if isinstance(path, str)), None)
            elsewhere = confine.WORLD_WRITABLE if sweep is not None and not self.landlock() else ()
            self.scratches[pidfd] = (scratch, most_bytes, most_entries, pid, procs, sweep, elsewhere)
            if elsewhere:
                self.elsewhere[pidfd] = elsewhere
        return pid, pidfd

    def keep(self, pid, cpus):
        """Keep child `pid`, started and ready, to `cpus` from now on (its next load, cases and forks run there).

        A worker with a CPU to spare starts its next sandbox there (the spare: its jail's making costs the CPU
        that grades the current student nothing), and moves it to its own CPU once it is ready, before any of
        the student's code runs in it: its forks then inherit the worker's CPUs, as cpuclock.waits_by_choice
        expects. Done here, not by the grader: only this process reaps its children, so `pid` is the child's
        until this returns (a child that ended meanwhile is a zombie: its pid is not anyone else's yet). The
        runtime is one thread until student code runs (affinity is a thread's): a child of more is refused."""
        if type(pid) is not int or not isinstance(cpus, list) or not cpus or \
                not all(type(cpu) is int for cpu in cpus) or not any(p == pid for p, *_ in self.children.values()):
            raise ValueError("not a child of this zygote's to keep")
        with open(f"/proc/{pid}/status", "rb") as status:
            threads = next((line.split()[1] for line in status if line.startswith(b"Threads:")), b"")
        if threads != b"1":
            raise ValueError(f"the child runs {threads.decode(errors='replace') or 'no'} threads")
        os.sched_setaffinity(pid, cpus)

    def stop_all(self):
        for pidfd in list(self.children):
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
        for pidfd in list(self.children):
            select.select([pidfd], [], [], 5)
            self._ended(pidfd)

    def serve(self):
        control = self.control.fileno()
        while True:
            poller = select.poll()
            for fd in (control, *self.children, *self.handoffs, *self.listeners):
                poller.register(fd, select.POLLIN)
            events = poller.poll(WATCH_SECONDS * 1000 if self.scratches or self.strays else None)
            self.watch()
            if self.strays:
                self.reap_strays()
            ready = set()
            for fd, event in events:
                if fd in self.listeners:
                    if event & select.POLLIN:
                        self.notified(fd)
                    elif event & (select.POLLHUP | select.POLLERR | select.POLLNVAL):   # none of it is left
                        self._drop_listener(fd)
                elif fd in self.handoffs:
                    self.taken(fd)
                else:
                    ready.add(fd)
            for pidfd in ready - {control}:
                if pidfd in self.children:
                    self._ended(pidfd)
            if control not in ready:
                continue
            try:
                data, fds, _, _ = socket.recv_fds(self.control, MAX_MESSAGE, 8)
            except OSError:
                data, fds = b"", []
            if not data:
                return
            try:
                request = json.loads(data)
                if request.get("op") == "stop":
                    return
                if request.get("op") == "keep":
                    for fd in fds:
                        os.close(fd)
                    fds = []
                    self.keep(request.get("pid"), request.get("cpus"))
                    socket.send_fds(self.control, [b'{"kept": true}'], [])
                    continue
                if len(fds) != 5:
                    raise ValueError("a spawn needs five descriptors")
                pid, pidfd = self.spawn(request["config"], fds)
                reply = {"pid": pid, "preload": sorted(self.asked)}   # asked for: imported where installed
                socket.send_fds(self.control, [json.dumps(reply).encode()], [pidfd])
            except Exception as error:  # noqa: BLE001 - a bad request is answered, never fatal
                for fd in fds:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                socket.send_fds(self.control, [json.dumps({"error": f"{type(error).__name__}: {error}"}).encode()],
                                [])


def _try(action):
    """Run `action` in a forked child; True when it returned without an exception."""
    pid = os.fork()
    if pid == 0:
        try:
            action()
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def probe():
    """What this machine lets a sandbox have, tried the way a real child does it. Printed as JSON."""
    unique = confine.UID_BASE + os.getpid()

    def unprivileged():
        confine.drop_privileges(unique, unique)

    def kind(flag):
        def action():
            unprivileged()
            if confine._libc.unshare(confine.CLONE_NEWUSER | flag) != 0:
                raise OSError("unshare")
        return action

    def jail():
        uid, gid = os.geteuid(), os.getegid()
        root = uid == 0
        pid = confine.clone_namespaces(user=not root)
        if pid == 0:   # as _init does it
            try:
                confine.finish_namespaces(uid, gid, user=not root)
                confine.build_root(confine.python_trees(), 1 << 20, 64, owner=unique if root else confine.STUDENT_ID)

                def inside():
                    if root:
                        confine.drop_privileges(unique, unique)
                        confine.enter_student_namespace()
                    confine.drop_capabilities()
                    if confine.capabilities_effective() != 0:
                        raise OSError("not confined")
                if not root:
                    confine.forbid_user_namespaces()
                os._exit(0 if _try(inside) else 1)
            finally:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise OSError("build_root")

    # Every kind at once first (one fork, not eight: ~5 ms of CPU and ~15 ms of a batch's start less): where that
    # works, so does each kind alone and the drop of the uid it began with; only where it fails is each tried.
    every = _try(kind(functools.reduce(operator.or_, (flag for _, flag in confine.ALL_NAMESPACES))))
    facts = {"uid": os.geteuid(), "drop_uid": every or os.geteuid() != 0 or _try(unprivileged),
             "namespaces": {name: every or _try(kind(flag if name != "user" else 0))
                            for name, flag in confine.ALL_NAMESPACES},
             "jail": _try(jail)}
    print(json.dumps(facts))


def _running(pid):
    """Whether `pid` is a live process: not gone, and not a zombie (a dead grader its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def remove_grader_folders(grader, folder):
    """Remove the temp folders (`folder`/puzzle-grader-UID-PID-*) of the grader process `grader` once it is gone.

    A grader removes its folder in an exit handler, which a killed one never runs: a Dask worker ends by SIGTERM
    to its process group or multiprocessing's os._exit, a watchdog's SIGKILL ends a local worker, and the folder
    stayed until the next grader process on that machine swept folders of dead owners. The zygote outlives its
    grader (its own session; it learns of the death by pdeathsig or its socket's end), so it removes them, after
    its children are gone. Only while that pid runs no process (it is not reused before it is reaped), and only
    real folders of this uid that no one else may write, never through a link, however deep (confine.remove_tree)."""
    if not folder or grader <= 0 or _running(grader):
        return
    prefix = f"puzzle-grader-{os.getuid()}-{grader}-"
    try:
        names = [name for name in os.listdir(folder) if name.startswith(prefix)]
    except OSError:
        return
    for path in (os.path.join(folder, name) for name in names):
        if confine.own_folder(path):
            confine.remove_tree(path)


def main(argv):
    if argv[1:] == ["--probe"]:
        os.umask(0o022)
        return probe()
    os.umask(0o022)   # the jail's folders must be reachable by the student's uid whatever the grader's umask
    # Not dumpable: where a sandbox runs as this uid (rlimits mode, not root) and no Landlock keeps ptrace inside
    # it, it could otherwise ptrace the zygote or open its control socket through /proc/PID/fd and have it fork
    # children of its own making, which every later student's sandbox would come from.
    confine.prctl(confine.PR_SET_DUMPABLE, 0)
    control = socket.socket(fileno=int(argv[1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)          # Ctrl-C is the grader's; it stops us
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # pdeathsig: clean up, then go
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGTERM)
    confine.prctl(confine.PR_SET_CHILD_SUBREAPER, 1)   # what a killed runtime left comes here (reap_strays)
    grader, folder = (int(argv[2]), argv[3]) if len(argv) >= 4 else (0, "")
    zygote = Zygote(control, folder=folder)
    # What every child needs and nothing of a student's: the interpreter's trees for the jail, worked out once
    # here instead of in each sandbox's init (about 2 ms of CPU: sysconfig imported, every tree resolved).
    confine.python_trees()
    confine.unrelated_site_packages()
    confine.small_tcp_tables()
    runtime.take_base_leaves()
    # Everything the zygote holds now is what each child starts from: the collector leaves it alone, so a
    # collection in a child does not copy every page of numpy's objects.
    gc.freeze()
    trim()
    try:
        if os.getppid() != 1:
            zygote.serve()
    finally:
        zygote.stop_all()
        for _ in range(50):   # what the last ones left, and what that left in turn (each killed, then reaped)
            if not zygote.strays:
                break
            time.sleep(0.01)
            zygote.reap_strays()
        zygote.drop_prepared()   # before the grader's folders: its mounts are never walked
        remove_grader_folders(grader, folder)


if __name__ == "__main__":
    main(sys.argv)
