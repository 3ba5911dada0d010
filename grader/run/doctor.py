"""`grader doctor`: what containment this machine offers student code, and what a TA would change for more."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from grader.sandbox import confine
from grader.sandbox.isolation import Isolation, detect, probe


@dataclass(frozen=True)
class Diagnosis:
    isolation: Isolation
    grader_uid: int
    namespaces: dict[str, bool]       # kind -> an unprivileged process may enter a new one
    jail: bool                        # the whole jail (allowlist root, no capabilities) could be built
    unused_uid: bool                  # as root: student code can run as a uid that owns nothing
    interpreter_readable: bool        # an unprivileged uid can read the interpreter's files
    pids_cgroup: bool
    advice: tuple[str, ...]
    memory_cgroup: bool = False       # one memory limit for the whole sandbox (processes, tmpfs, memfd)
    landlock: int = 0                 # the Landlock ABI: rlimits mode's file system allowlist (0: none)
    cpu_cgroup: bool = False          # a cgroup counts each sandbox's CPU time (every process, from a case's start)


def diagnose() -> Diagnosis:
    facts = probe()
    isolation = detect()
    namespaces = {name: bool(facts.get("namespaces", {}).get(name)) for name, _ in confine.ALL_NAMESPACES}
    readable = all(confine.readable_by_anyone(tree) for tree in confine.python_trees())
    advice = []
    if not namespaces["user"]:
        advice.append("User namespaces are off: student code sees the host's files (read-only protection is "
                      "only Unix permissions), shares its network and IPC, and runs as "
                      + ("an unused uid" if os.geteuid() == 0 and readable else "the grader's uid") + ". "
                      "Enable them (sysctl user.max_user_namespaces=10000; kernel.unprivileged_userns_clone=1 on "
                      "Debian/Ubuntu kernels; kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04; "
                      "in Docker: --security-opt seccomp=unconfined --security-opt apparmor=unconfined, or "
                      "--privileged).")
    elif not facts.get("jail"):
        advice.append("User namespaces work but the jail could not be built (mount, pivot_root or procfs "
                      "refused): in Docker, add --security-opt seccomp=unconfined and a writable /proc "
                      "(no masked /proc paths: --security-opt systempaths=unconfined).")
    if os.geteuid() == 0 and not isolation.namespaces and not readable:
        advice.append(f"The interpreter ({sys.base_prefix}) is not readable by an unprivileged uid, so without "
                      "namespaces student code could only run as root: install Python where others can read "
                      "it (e.g. /usr/local), or grade with --allow-root-sandbox knowingly.")
    if isolation.pids_root is None:
        advice.append("No writable pids cgroup (/sys/fs/cgroup/pids): a fork bomb is capped only by "
                      "RLIMIT_NPROC, which needs an unused uid. Run the grader as root, or delegate a cgroup.")
    landlock = confine.landlock_abi()
    if not isolation.namespaces and not landlock:
        advice.append("No Landlock (Linux >= 5.13 with landlock in the lsm= list): without namespaces student "
                      "code can read every world-readable file on this machine"
                      + (" and write every file of yours, and open your terminals (write escape sequences to "
                         "them, read what you type there)" if os.geteuid() != 0 else "")
                      + ". Keep the course readable by its owner only (chmod -R go-rwx), or enable namespaces or "
                      "Landlock.")
    if not isolation.namespaces and os.geteuid() != 0 and landlock < 6:
        advice.append("Without namespaces and without root, student code runs as your uid, and this kernel's "
                      "Landlock " + (f"(ABI {landlock}) " if landlock else "") + "cannot keep its signals "
                      "inside the sandbox (ABI >= 6, Linux >= 6.12): it can stop or kill a process of yours it "
                      "names by pid (not the grader or its ancestors, such as this shell: another terminal's, an "
                      "editor). Grade as root (each sandbox gets a uid of its own) or on a newer kernel.")
    if isolation.memory_root is None:
        advice.append("No writable memory cgroup: memory is bounded per process (RLIMIT_AS), so forked "
                      "processes, memfd and tmpfs pages can exceed limits.memory_mb. Run the grader as root, or "
                      "delegate the memory controller to its cgroup.")
    if not isolation.counts_cpu:
        advice.append("No cgroup may count a sandbox's CPU time (cpuacct in v1, any group in v2): a case's CPU "
                      "time is read from /proc from the grader's first look, so work done in parallel processes "
                      "before it is not charged (up to as many times the limit as there are CPUs). Run the grader "
                      "as root, or delegate a cgroup.")
    if os.geteuid() != 0 and isolation.namespaces:
        advice.append("Student code runs as your own uid mapped into its namespaces (it still sees only its "
                      "allowlist root). Run as root to give each sandbox a uid that owns nothing.")
    return Diagnosis(isolation, os.geteuid(), namespaces, bool(facts.get("jail")),
                     bool(facts.get("drop_uid")) if os.geteuid() == 0 else False, readable,
                     isolation.pids_root is not None, tuple(advice), isolation.memory_root is not None,
                     landlock, isolation.counts_cpu)


def render(diagnosis: Diagnosis) -> str:
    mark = {True: "yes", False: "no"}
    lines = [f"isolation level: {diagnosis.isolation.level}",
             f"grader uid: {diagnosis.grader_uid}",
             "namespaces an unprivileged process may enter: "
             + ", ".join(f"{name} {mark[ok]}" for name, ok in diagnosis.namespaces.items()),
             f"allowlist root (pivot_root into a built tmpfs, no capabilities): {mark[diagnosis.jail]}",
             f"unused uid for student code: {mark[diagnosis.unused_uid]}",
             f"interpreter readable by an unprivileged uid: {mark[diagnosis.interpreter_readable]}",
             f"pids cgroup: {mark[diagnosis.pids_cgroup]}",
             f"memory cgroup (one limit for the whole sandbox): {mark[diagnosis.memory_cgroup]}",
             f"CPU-counting cgroup (a case charged every process's CPU time): {mark[diagnosis.cpu_cgroup]}",
             "Landlock (rlimits mode's file system allowlist): "
             + (f"ABI {diagnosis.landlock}, keeps inside the sandbox: "
                + ", ".join(["files", *confine.landlock_held(diagnosis.landlock)])
                if diagnosis.landlock else "no")]
    if diagnosis.advice:
        lines += ["", "To get full isolation:", *(f"- {line}" for line in diagnosis.advice)]
    else:
        lines += ["", "Full isolation: every namespace, an allowlist root, an unused uid, pids, memory and CPU "
                      "cgroups."]
    return "\n".join(lines)
