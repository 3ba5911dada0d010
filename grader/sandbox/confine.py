"""Child-side confinement inside fresh namespaces: a read-only world, a writable scratch dir, course dirs hidden.

Runs in the child before any student code, as "root" of its own user namespace (no power outside it).
Stdlib only: loaded next to codec.py and wire.py in the untrusted child.
"""

import ctypes
import os

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC = 32, 4096, 16384
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
# Flags the kernel locks on mounts inherited into a user namespace: a remount must repeat them.
_LOCKED = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
           "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}


def _mount(source, target, fstype, flags, data=None):
    libc = ctypes.CDLL(None, use_errno=True)
    encode = lambda text: None if text is None else text.encode()  # noqa: E731
    if libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


def _mounts():
    """Mount points with their per-mount options, from this namespace's mountinfo."""
    with open("/proc/self/mountinfo", encoding="utf-8") as info:
        for line in info:
            parts = line.split()
            point = parts[4].encode().decode("unicode_escape")
            yield point, parts[5].split(",")


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def in_own_namespaces():
    """True when this process is PID 1 of a pid namespace (started through unshare --pid --fork)."""
    return os.getpid() == 1


def needed_paths(scratch):
    """What the child must still see: its interpreter, libraries and scratch dir."""
    import site
    import sysconfig
    import sys
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, scratch, os.path.dirname(os.path.abspath(__file__))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths().get(key, ""))
    try:
        paths.update(site.getsitepackages())
    except AttributeError:  # pragma: no cover - virtualenv's old site.py
        pass
    return sorted(os.path.realpath(p) for p in paths if p and os.path.isdir(p))


def confine(scratch, hide, keep=None):
    """Hide each folder of `hide` under an empty read-only tmpfs, re-expose the `keep` paths inside them,
    and make every other mount read-only except `scratch`.

    Returns the problems met (empty when confinement is complete).
    """
    problems = []
    keep = needed_paths(scratch) if keep is None else keep
    hide = [os.path.realpath(h) for h in hide if os.path.isdir(h)]
    # A kept path inside a hidden folder is opened now and bound back in after the folder is covered.
    reopen = []
    for path in keep:
        if any(_inside(path, folder) and path != folder for folder in hide):
            try:
                reopen.append((path, os.open(path, os.O_RDONLY | os.O_DIRECTORY)))
            except OSError as error:
                problems.append(f"open {path}: {error.strerror}")
    covered = []
    for folder in sorted(set(hide), key=len):
        if any(_inside(folder, done) for done in covered):
            continue   # already under a covered folder
        try:
            _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=755")
            covered.append(folder)
        except OSError as error:
            problems.append(str(error))
    for path, fd in reopen:
        try:
            os.makedirs(path, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        except OSError as error:
            problems.append(f"re-expose {path}: {error}")
        finally:
            os.close(fd)
    if not any(path == scratch for path, _ in reopen):
        try:
            _mount(scratch, scratch, None, MS_BIND | MS_REC)
        except OSError as error:
            return problems + [str(error)]
    for point, options in list(_mounts()):
        if _inside(point, "/proc") or point == scratch:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in options:
            flags |= _LOCKED.get(option, 0)
        try:
            _mount(None, point, None, flags)
        except OSError as error:
            problems.append(str(error))
    return problems


CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000


def lock():
    """Enter a fresh user and mount namespace: every mount inherited from the confining namespace becomes
    locked, so the student (root of the new namespace) can neither unmount a cover to reveal the course
    nor remount anything writable. Returns the problems met."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        error = ctypes.get_errno()
        return [f"unshare: {os.strerror(error)}"]
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w", encoding="ascii") as file:
                file.write(text)
    except OSError as error:
        return [f"user namespace map: {error}"]
    return []
