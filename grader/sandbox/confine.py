"""The child's jail, built in-process: credentials, namespaces, an allowlist root, and no capabilities.

bubblewrap's argument list is the model (`--unshare-all --uid 1000 --die-with-parent --tmpfs / --ro-bind
/usr /usr ... --dev-bind /dev/null /dev/null --proc /proc --tmpfs /tmp --remount-ro / --disable-userns
--cap-drop ALL --new-session`), done with direct system calls because the zygote forks the child and an
exec of bwrap per submission would cost an interpreter start. Stdlib only: the zygote loads this module
next to the runtime in a clean interpreter, and it runs before any student code.
"""

import ctypes
import errno
import functools
import os
import signal
import socket
import stat

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE, MS_SLAVE = 32, 4096, 16384, 1 << 18, 1 << 19
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
MNT_DETACH = 2
# statvfs flag -> mount flag, for the flags the kernel locks on mounts seen from a user namespace:
# a read-only remount of a bind must repeat them.
_STATVFS_TO_MS = {2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: MS_NOATIME, 2048: MS_NODIRATIME,
                  4096: MS_RELATIME}
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
ALL_NAMESPACES = (("user", CLONE_NEWUSER), ("mount", CLONE_NEWNS), ("pid", CLONE_NEWPID), ("net", CLONE_NEWNET),
                  ("ipc", CLONE_NEWIPC), ("uts", CLONE_NEWUTS), ("cgroup", CLONE_NEWCGROUP))
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 4, 24, 38, 47
PR_SET_CHILD_SUBREAPER = 36
STUDENT_ID = 1000                # the student's uid and gid inside the user namespace
# Host uids for sandboxes when the grader is root: one per live sandbox (base + the host pid of its first
# process, unique while it lives), so no two sandboxes share a uid and none owns a file on the host.
UID_BASE = 0x40000000
SYSTEM_TREES = ("/usr/bin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec", "/usr/sbin",
                "/bin", "/lib", "/lib32", "/lib64", "/sbin")
ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime")
DEVICES = ("null", "zero", "full", "random", "urandom")
# The student's working folder (and home) in a jail: a mount of its own that no host tree is ever bound below, so
# that what a case lists there is the course's data files whatever path the grader, its venv or its results live in.
# /tmp shares its tmpfs (one bound of `disk_mb` and `files`) and is where a host tree that lives under /tmp is bound.
HOME = "/home/student"

_libc = ctypes.CDLL(None, use_errno=True)
# What the runtime calls here after a notebook's code has run in its process (empty_folder between exercises,
# die_with_parent in each exercise's fork), as this module found it before any student code: a notebook that
# patched os, os.path, stat or ctypes would otherwise run its code in the runtime itself, outside every case's
# clock, and change what each later fresh fork starts from.
_listdir, _lstat, _chmod, _rmdir, _unlink = os.listdir, os.lstat, os.chmod, os.rmdir, os.unlink
_open, _close, _fstat = os.open, os.close, os.fstat
_listxattr, _getxattr, _setxattr, _removexattr = os.listxattr, os.getxattr, os.setxattr, os.removexattr
_utime = os.utime
_S_IMODE = stat.S_IMODE
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_S_ISDIR = stat.S_ISDIR
_prctl, _c_ulong = _libc.prctl, ctypes.c_ulong


class JailError(OSError):
    pass


def _check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise JailError(error, f"{what}: {os.strerror(error)}")


def _mount(source, target, fstype, flags, data=None):
    encode = lambda text: None if text is None else text.encode()  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)), f"mount {target}")


def prctl(option: int, value: int) -> int:
    return int(_prctl(option, _c_ulong(value), 0, 0, 0))


def die_with_parent():
    """SIGKILL when the parent goes; cleared by fork and by credential changes, so set after each."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def drop_privileges(uid, gid):
    """Root becomes `uid`/`gid` with no supplementary groups; anyone else keeps who they are."""
    if os.geteuid() != 0:
        return os.geteuid()
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    return os.geteuid()


# clone(2) by machine (its arguments after the flags are all 0 here, so their order does not matter)
_SYS_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220}.get(os.uname().machine)


# The zygote's own network namespaces, as descriptors: [the host's, one of its own] once small_tcp_tables() holds.
_NETWORKS: list = []


def small_tcp_tables(buckets=128):
    """Have every network namespace clone_namespaces makes own a small TCP table instead of sharing the host's.
    True when it holds (root, Linux >= 6.1); else nothing changes.

    Why: when a network namespace ends, a kernel worker walks the TCP table it used for TIME_WAIT sockets; a new
    namespace shares the host's (262,144 buckets on the course machine: ~0.3 ms of a kernel worker's CPU per
    sandbox) unless the namespace it is made from sets net.ipv4.tcp_child_ehash_entries. The host's setting is
    never touched: it is set in a namespace of the zygote's own, which clone_namespaces stands in for the clone
    only (the zygote is back in the host's at once; no sandbox ever enters that namespace)."""
    if _NETWORKS or os.geteuid() != 0:
        return bool(_NETWORKS)
    try:
        host = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    parent = -1
    try:
        _check(_libc.unshare(CLONE_NEWNET), "unshare net")
        try:
            parent = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            write_small("/proc/sys/net/ipv4/tcp_child_ehash_entries", b"%d" % buckets)
        finally:
            _check(_libc.setns(host, CLONE_NEWNET), "setns back to the host's network")
    except OSError:
        for fd in (host, parent):
            if fd >= 0:
                os.close(fd)
        return False
    _NETWORKS[:] = [host, parent]
    return True


def forget_networks():
    """In a child of the zygote: no descriptor of the zygote's network namespaces stays open."""
    for fd in _NETWORKS:
        os.close(fd)
    _NETWORKS.clear()


def clone_namespaces(user=True):
    """fork() straight into new mount, pid, net, IPC and UTS namespaces (and a new user namespace when `user`):
    the child is PID 1 of the new pid namespace, so no process has to stay behind in the old one to fork it
    (unshare leaves its caller outside: only the caller's next child would be PID 1). As fork: 0 in the
    child, the child's pid in the parent. The cgroup namespace comes later (finish_namespaces), once the child
    is in its own groups.

    A bare system call runs none of the interpreter's or libc's fork handlers, so the caller must be
    single-threaded (the zygote is), and the child must only jail itself, make children with os.fork (which
    sets up each of them properly) and exit."""
    if _SYS_CLONE is None:
        raise JailError(errno.ENOSYS, f"clone: no system call number known for {os.uname().machine}")
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | (CLONE_NEWUSER if user else 0)
    networks = list(_NETWORKS) if not user else []   # see small_tcp_tables
    if networks:
        _check(_libc.setns(networks[1], CLONE_NEWNET), "setns to the zygote's network")
    pid = _libc.syscall(_SYS_CLONE, ctypes.c_long(flags | signal.SIGCHLD), ctypes.c_long(0), ctypes.c_long(0),
                        ctypes.c_long(0), ctypes.c_long(0))
    error = ctypes.get_errno() if pid < 0 else 0
    if networks and pid != 0:   # the child has a network namespace of its own already
        _check(_libc.setns(networks[0], CLONE_NEWNET), "setns back to the host's network")
    if pid < 0:
        raise JailError(error, f"clone: {os.strerror(error)}")
    return pid


def finish_namespaces(uid, gid, user=True):
    """In a child of clone_namespaces, in its own cgroups now: map the student's id to `uid`/`gid` (the parent's
    ids) in the new user namespace (when `user`), and enter a cgroup namespace whose root is those groups.
    Returns the names of the namespaces this process is in that are its own."""
    if user:
        map_student(uid, gid)
    _check(_libc.unshare(CLONE_NEWCGROUP), "unshare cgroup")
    return [name for name, _ in ALL_NAMESPACES if user or name != "user"]


# The jail is set up by a fresh fork of the zygote, which copies every page it writes: these read and write
# the few small files of /proc, /sys and /etc it needs as bytes, through descriptors. A text file object
# (a buffer, a TextIOWrapper, its codec: ~140 pages copied the first time in a fork) would cost more than the
# system calls themselves.

def read_small(path):
    """The whole of a small file (of /proc: read until its end), as bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_small(path, data, flags=os.O_WRONLY, mode=0o644):
    """Write `data` (bytes) to `path` in one write(2): a uid_map or a cgroup.procs takes one write or none."""
    fd = os.open(path, flags | os.O_CLOEXEC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _own_stat():
    """The fields of /proc/self/stat after the command, as the procfs this process sees counts them (the host's,
    before the jail's root replaces it: pids of the host's pid namespace)."""
    return read_small("/proc/self/stat").rsplit(b")", 1)[1].split()


def host_parent():
    """This process's parent's pid in the host's pid namespace (getppid() says 0 when the parent is outside this
    process's pid namespace)."""
    return int(_own_stat()[1])


def host_pid():
    """This process's pid in the host's pid namespace (getpid() says 1 to PID 1 of a new one)."""
    return int(os.readlink("/proc/self"))


def map_student(uid, gid):
    """Write this (new) user namespace's maps: the student's id inside is `uid`/`gid` (this process's ids
    before the unshare) outside."""
    prctl(PR_SET_DUMPABLE, 1)     # /proc/self is root's while non-dumpable (after setuid): make it ours
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{STUDENT_ID} {uid} 1"),
                           ("gid_map", f"{STUDENT_ID} {gid} 1")):
            write_small(f"/proc/self/{name}", text.encode("ascii"))
    finally:
        prctl(PR_SET_DUMPABLE, 0)     # never ptrace-able by the student, who shares the uid


def enter_student_namespace():
    """From a jail built by real root: the student's own user namespace (so no file outside the jail's
    binds can ever be owned by it), with no further user namespace below it and no capability left."""
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(CLONE_NEWUSER), "unshare user")
    map_student(uid, gid)
    forbid_user_namespaces()


def _lexists(path):
    try:
        os.lstat(path)
        return True
    except OSError:
        return False


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def allowlist(python_paths, extra=()):
    """Host paths the child sees read-only: system libraries and tools, the interpreter's trees, and
    `extra`. Paths under another listed tree are dropped; symlinks (merged /usr) are kept as links."""
    wanted = [os.path.realpath(p) for p in (*python_paths, *extra) if p and os.path.isdir(p)]
    trees: list = []
    for path in sorted(set(wanted), key=len):
        if not any(_inside(path, tree) for tree in trees):
            trees.append(path)
    return trees


def _ro_bind(source, target, is_dir=True):
    if is_dir:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not _lexists(target):
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    _mount(source, target, None, MS_BIND)
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    status = os.statvfs(target)
    for bit, flag in _STATVFS_TO_MS.items():
        if status.f_flag & bit:
            flags |= flag
    _mount(None, target, None, flags)


def _write(path, text, mode=0o644):
    write_small(path, text.encode("utf-8"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)


def build_root(trees, scratch_bytes, scratch_files, cover=(), owner=STUDENT_ID, base="/tmp"):
    """pivot_root into a fresh tmpfs holding read-only binds of `trees` (same paths), /dev with a few
    character devices, a generated /etc without credentials, this pid namespace's procfs and one bounded
    tmpfs scratch, bound at HOME (the working folder) and at /tmp. Folders of `cover` inside a tree are covered
    by an empty tmpfs. The host's root is detached: nothing else exists. (enter_root makes the same root from
    the fixed part a zygote prepared once: prepare_root.)

    Must run as PID 1 of a new pid namespace with CAP_SYS_ADMIN in its user namespace."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)          # nothing we do propagates to the host
    _mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,nr_inodes=64,mode=755")
    os.mkdir(f"{base}/newroot")
    os.mkdir(f"{base}/oldroot")
    _check(_libc.syscall(155, f"{base}".encode(), f"{base}/oldroot".encode()), "pivot_root")  # SYS_pivot_root
    os.chdir("/")
    old, new = "/oldroot", "/newroot"
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=755")
    for target in SCRATCH_FOLDERS.values():
        os.makedirs(new + target)
    _scratch("/scratch", new, scratch_bytes, scratch_files, owner)
    _static_root(new, old, trees)
    _cover(new, trees, cover)
    _mount_proc(new + "/proc")
    _check(_libc.umount2(old.encode(), MNT_DETACH), "umount old root")
    os.rmdir(old)
    os.chdir(new)
    _check(_libc.syscall(155, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "umount base")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


# The scratch's folders and where each is bound in the jail. The scratch is mounted outside the new root and
# bound into it twice: at HOME, the working folder, and at /tmp, where a tree that lives under /tmp on the host (a
# venv or a clone in a temp folder) is bound below. When /tmp was the working folder too, a case listing it saw the
# host's layout ('fresh21-1'), and what it saw depended on where the grader was installed. Its own mount, neither
# can be removed or renamed by the student.
SCRATCH_FOLDERS = {"home": HOME, "tmp": "/tmp"}


def _scratch(at, new, scratch_bytes, scratch_files, owner):
    """The sandbox's bounded tmpfs, mounted at `at` (a folder outside the new root, detached with the host's
    root), its folders bound into the new root at `new` (SCRATCH_FOLDERS, folders there already). Given to `owner`
    by chown, not by the mount's uid= and gid=: the jail's /proc/self/mountinfo shows a mount's options as given,
    and under a root grader `owner` is UID_BASE + the runtime's host pid, which told a jail its host pid."""
    if not os.path.isdir(at):
        os.mkdir(at)
    _mount("tmpfs", at, "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={max(4096, int(scratch_bytes))},nr_inodes={max(16, int(scratch_files))},mode=700")
    os.chown(at, owner, owner)
    for folder, target in SCRATCH_FOLDERS.items():
        os.mkdir(f"{at}/{folder}", 0o700)
        os.chown(f"{at}/{folder}", owner, owner)
        _mount(f"{at}/{folder}", new + target, None, MS_BIND)


def _in_scratch(tree):
    return any(_inside(tree, target) for target in SCRATCH_FOLDERS.values())


def _static_root(new, old, trees, skip_scratch=False):
    """What a jail's root at `new` holds whatever its sandbox: read-only binds of the system's trees and of
    `trees` (same paths) from the host seen at `old`, a generated /etc without credentials, /dev with a few
    character devices, and the folder its procfs is mounted on. `skip_scratch`: the trees that lie in a
    scratch folder (a venv under /tmp) are left out, for enter_root to bind once the scratch is there."""
    for path in SYSTEM_TREES:
        source = old + path
        if os.path.islink(source):
            os.symlink(os.readlink(source), new + path)
        elif os.path.isdir(source) and not any(_inside(path, tree) for tree in trees):
            _ro_bind(source, new + path)
    for tree in trees:
        if not (skip_scratch and _in_scratch(tree)) and os.path.isdir(old + tree) and not _lexists(new + tree):
            _ro_bind(old + tree, new + tree)
    os.makedirs(new + "/etc", exist_ok=True)
    for path in ETC_FILES:   # a link to an absolute path is not followed (build_root sees the host's root at `old`)
        if os.path.isfile(old + path) and not (os.path.islink(old + path) and os.readlink(old + path).startswith("/")):
            _ro_bind(old + path, new + path, is_dir=False)
    _write(new + "/etc/passwd", f"student:x:{STUDENT_ID}:{STUDENT_ID}:student:{HOME}:/bin/sh\n"
                                "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    _write(new + "/etc/group", f"student:x:{STUDENT_ID}:\nnogroup:x:65534:\n")
    _write(new + "/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n")
    _write(new + "/etc/hostname", "sandbox\n")
    os.makedirs(new + "/dev", exist_ok=True)
    for device in DEVICES:
        if _lexists(f"{old}/dev/{device}"):
            _ro_bind(f"{old}/dev/{device}", f"{new}/dev/{device}", is_dir=False)
            _mount(None, f"{new}/dev/{device}", None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2"), ("shm", "/tmp")):
        os.symlink(target, f"{new}/dev/{name}")
    os.makedirs(new + "/proc")


def _cover(new, trees, cover):
    for folder in cover:
        if any(_inside(folder, tree) and folder != tree for tree in (*trees, *SYSTEM_TREES)) \
                and os.path.isdir(new + folder):
            _mount("tmpfs", new + folder, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=755")


# A prepared root (prepare_root): the folder the zygote mounts it in holds the root itself and the folder each
# sandbox mounts its scratch on.
PREPARED_ROOT, PREPARED_SCRATCH = "/root", "/scratch"


def prepare_root(folder, trees):
    """In the zygote, as real root, once: the part of every jail's root that is the same for all its sandboxes
    (_static_root: the system's and the interpreter's binds, /etc, /dev), made in an empty `folder` of a mount
    namespace of the zygote's own, for each child's enter_root to start from. build_root made it again in every
    sandbox (~1 ms of the child's CPU and ~100 pages it copied from the zygote, of a start of ~3); a child's clone
    now copies these mounts with the rest of the zygote's namespace, in the kernel.

    The zygote's namespace is a slave of the host's: the host's mounts still reach it, none of its own reaches the
    host, where `folder` stays an empty folder. Its tmpfs superblocks are made read-only once built: every sandbox
    shares them (a copy of a mount is the same file system), and no one may write them again, so nothing one
    sandbox does there is seen by another (no file, no time, no count changes). Raises JailError (OSError) where it
    cannot; the caller then builds each root whole (build_root)."""
    _check(_libc.unshare(CLONE_NEWNS), "unshare mount")
    _mount(None, "/", None, MS_REC | MS_SLAVE)
    _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,nr_inodes=8,mode=700")
    root, scratch = folder + PREPARED_ROOT, folder + PREPARED_SCRATCH
    os.mkdir(root, 0o755)
    os.mkdir(scratch, 0o700)
    _mount(None, folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=755")
    for target in SCRATCH_FOLDERS.values():
        os.makedirs(root + target)
    _static_root(root, "", trees, skip_scratch=True)
    _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def drop_prepared_root(folder):
    """The zygote's end: its prepared root detached, and `folder`, empty then, removed (on the host it always was)."""
    _libc.umount2(folder.encode(), MNT_DETACH)
    try:
        os.rmdir(folder)
    except OSError:
        pass


def enter_root(folder, trees, scratch_bytes, scratch_files, cover=(), owner=STUDENT_ID):
    """build_root's jail, from the root the zygote prepared in `folder` (prepare_root): this child's copy of it
    gets this sandbox's scratch (and the trees that lie in it), its covers and its procfs, and becomes the root;
    the host's root is detached. Same conditions as build_root."""
    root = folder + PREPARED_ROOT
    _mount(None, "/", None, MS_REC | MS_PRIVATE)          # nothing we do propagates to the host or the zygote
    _scratch(folder + PREPARED_SCRATCH, root, scratch_bytes, scratch_files, owner)
    for tree in trees:
        if _in_scratch(tree) and os.path.isdir(tree) and not _lexists(root + tree):
            _ro_bind(tree, root + tree)
    _cover(root, trees, cover)
    _mount_proc(root + "/proc")
    os.chdir(root)
    _check(_libc.syscall(155, b".", b"."), "pivot_root")   # SYS_pivot_root: the host's root is stacked on top
    _check(_libc.umount2(b".", MNT_DETACH), "umount host root")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


# The jail's procfs shows its processes only (`subset=pid`, Linux >= 5.8): the machine's counters in the rest of a
# procfs are every sandbox's at once, whatever its namespaces. Two jails graded at once (one's hidden cases, another
# student's public case) talked through them: a case holding 200 descriptors open moved /proc/sys/fs/file-nr by
# 200 +- 15 for the other to read, and 60 threads /proc/loadavg's count by 60 (binary, 100 ms a bit, load 6-8 on 2
# cores: 100 of 100 bits right, 10 bits/s; the counts are exact enough to carry several bits a reading); likewise
# inode-nr, dentry-state, aio-nr, /proc/stat's forks and times, meminfo, vmstat, pressure, interrupts, /proc/locks.
# Honest code keeps what it reads there: os.cpu_count() (glibc falls back to the CPUs it may use). sysinfo(2), which
# is not a file and tells the same counters, is refused (_SYSINFO).
# forbid_user_namespaces writes the one sysctl the jail needs through a descriptor of a full procfs of its own,
# mounted first and covered at once (_SYSCTL: closed by that write, before any student code).
_SYSCTL: list = []


def _mount_proc(target):
    """This pid namespace's procfs at `target`, its processes only where the kernel can (else all of it, as before);
    a descriptor of the full one's /proc/sys kept in _SYSCTL for forbid_user_namespaces."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    _mount("proc", target, "proc", flags)
    forget_sysctl()
    _SYSCTL.append(os.open(target + "/sys", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    try:
        _mount("proc", target, "proc", flags, "subset=pid")
    except JailError as error:
        if error.errno != errno.EINVAL:   # a kernel before 5.8 does not know the option: the full procfs stays
            raise


def forget_sysctl():
    """No descriptor of the covered procfs stays open (forbid_user_namespaces closes it; this, whatever happened)."""
    while _SYSCTL:
        os.close(_SYSCTL.pop())


def forbid_user_namespaces():
    """No namespace below this one: the student can never gain capabilities (and mount a tmpfs) again. Written in the
    namespace this process is in now (sysctl resolves user/ by the caller's), through _SYSCTL where the jail's procfs
    hides /proc/sys."""
    if not _SYSCTL:
        write_small("/proc/sys/user/max_user_namespaces", b"0")
        return
    try:
        fd = os.open("user/max_user_namespaces", os.O_WRONLY | os.O_CLOEXEC, dir_fd=_SYSCTL[0])
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
    finally:
        forget_sysctl()


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities():
    """No capability in any set, none to gain by exec (bounding set empty, no_new_privs)."""
    for cap in range(64):
        if prctl(PR_CAPBSET_DROP, cap) != 0 and ctypes.get_errno() == errno.EINVAL:
            break
    _libc.prctl(PR_CAP_AMBIENT, 4, 0, 0, 0)    # PR_CAP_AMBIENT_CLEAR_ALL
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")
    _check(prctl(PR_SET_NO_NEW_PRIVS, 1), "no_new_privs")


# The system calls that set a thread's scheduling (its nice value, policy or CPUs), per architecture: the audit
# architecture seccomp reports, then setpriority, sched_setparam, sched_setscheduler, sched_setaffinity, sched_setattr,
# io_uring_setup (a ring's kernel workers are threads of the sandbox whose CPUs IORING_REGISTER_IOWQ_AFF sets), and
# ioprio_set: where the sandbox runs as the grader's uid (rlimits mode, not root), IOPRIO_WHO_USER would put every
# process of that uid (the grader, the TA's shell) in the idle I/O class, and it stays so after the grading.
# setpriority to a nice value of 0 or more and sched_setaffinity seem to succeed and change nothing (_filter's
# "pretend"): os.nice(0) and os.nice(5) are a polite notebook's, os.sched_setaffinity(0, its own CPUs) a library's,
# and in Jupyter they succeed; refused, they raised PermissionError out of an honest case (os.nice(5) returns the
# nice value kept, 0, where Jupyter's returns 5). A negative one is refused as it is unprivileged.
_SCHEDULING_CALLS = {"x86_64": (0xC000003E, (141, 142, 144, 203, 314, 425, 251)),
                     "aarch64": (0xC00000B7, (140, 118, 119, 122, 274, 425, 30))}
# Denied too: the kernel's keyrings (add_key, request_key, keyctl): the sandbox inherits the grader's session
# keyring, so it "possesses" every key the grader's session holds (a TA's Kerberos or other tokens), and as the
# grader's uid it could also read its user keyring. No notebook needs a keyring (Docker's default profile denies
# them too).
_KEYRING_CALLS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}
# prlimit64 and kill, by architecture: calls allowed or refused by their first argument. prlimit64 only on the
# caller itself (pid 0, as setrlimit and getrlimit call it): as the grader's uid (rlimits mode, not root) a student
# set the grader's RLIMIT_NOFILE or RLIMIT_CPU (the grader then failed or died), and nothing of a sandbox needs
# another process's limits. kill(-1) where the sandbox runs as the grader's uid: that signals every process of the
# uid (the grader, its zygote, the TA's shell), and Landlock's signal scope (ABI >= 6) is not everywhere. There
# socket() is refused too (socketpair stays): a pathname unix socket of the uid (an ssh-agent's, a desktop bus)
# was reachable through Landlock (whose file rules do not cover connect), and UDP through every ABI; a jail has
# no network either. What it costs a notebook: multiprocessing's Manager and forkserver.
_PRLIMIT = {"x86_64": 302, "aarch64": 261}
_KILL = {"x86_64": 62, "aarch64": 129}
_SOCKET = {"x86_64": 41, "aarch64": 198}
# socket() where the sandbox shares the host's network namespace (rlimits mode) as a uid of its own: every family but
# AF_UNIX is refused, whatever Landlock offers (ABI 4 refuses TCP only from then on, and nothing without it). As an
# unused uid without Landlock, a notebook connected to the batch's own Dask scheduler (127.0.0.1, a LocalCluster's
# or a cluster's) and had it run a function on the workers, as the grader's uid, root (session 18): it could have
# rewritten any result. A jail has no network; neither has this now. socketpair and AF_UNIX (multiprocessing) stay.
_AF_UNIX = 1
# Where the uid is the grader's (whatever the Landlock ABI: its signal scope, ABI >= 6, is missing on Linux 5.13 to
# 6.11, most TA laptops, and without Landlock), the calls that signal a process named by its pid are refused for
# the pids the grader names (itself, its zygote, its ancestors: the pool's coordinator, the TA's shell) and their
# process groups: kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo and pidfd_open (then pidfd_send_signal) by their
# first argument; tkill always (deprecated, and a thread id of the grader is not known ahead); fcntl F_SETOWN /
# F_SETOWN_EX and ioctl FIOSETOWN / SIOCSPGRP always (SIGIO to a pid of the student's choosing when a pipe becomes
# readable).
_SIGNAL_BY_PID = {"x86_64": (234, 129, 297, 434), "aarch64": (131, 138, 240, 434)}
# That left every other process of the uid to a sandbox: below Landlock ABI 6 (Ubuntu 24.04's 6.8 kernel, where a
# TA's laptop falls to rlimits mode, has ABI 4) a case SIGKILLed the sandbox grading another student in the batch's
# other worker (tests/test_hostile_signal.py: the victim's correct notebook lost every point). A seccomp filter sees a
# call's numbers, never whose the pid is, and a sandbox's own pids (its forks, a pool's workers) are not known ahead.
# So where the zygote can answer (a user notification, and SECCOMP_USER_NOTIF_FLAG_CONTINUE: Linux >= 5.5) every
# signal but 0 and kill(0) (the caller's own process group: its session is the sandbox's, made by the runtime's
# setsid or a process of it) goes to the zygote, which lets through what names a process of the sandbox and refuses
# the rest (signal_target). The sandbox's own kills (the runtime's sweeps, a pool's terminate) cost a round trip to
# the zygote each, and only in this mode (a jail's pid namespace or an unused uid keeps the others away by itself).
# What it leaves: the pid looked at may die and be given to another process between the look and the kernel's
# delivery, which takes the machine's whole pid range (pid_max, 4,194,304 on 64-bit) started within those
# microseconds; and the call is delivered as the caller's, from its own thread (CONTINUE), so nothing else changes.
_SIGNAL_CALLS = {"x86_64": (62, 234, 129, 297), "aarch64": (129, 131, 138, 240)}   # kill, tgkill, rt_(tg)sigqueueinfo
_TKILL = {"x86_64": 200, "aarch64": 130}
# pidfd_send_signal, any signal but 0, refused whoever it names: its pidfd need not come from pidfd_open. An fd of the
# folder /proc/PID (os.open(f"/proc/{pid}", os.O_DIRECTORY), which the rlimits-mode allowlist lets it read) is one,
# and without Landlock's signal scope it reached the grader (/tmp/incheck/pidfd_grader.py at ABI 5: a signal 0 to
# the grader and its zygote went through, so SIGKILL and SIGSTOP would have). Python's own modules never call it.
_PIDFD_SEND_SIGNAL = {"x86_64": 424, "aarch64": 424}
_FCNTL = {"x86_64": 72, "aarch64": 25}
_IOCTL = {"x86_64": 16, "aarch64": 29}
_SET_OWNER = ((8, 15), (0x8901, 0x8902))   # fcntl's commands, ioctl's requests
# What two sandboxes graded at once share is the host's files, read-only but the same inodes (the interpreter's trees,
# /usr), and a file's locks and watches belong to its inode, whatever mount or namespace reaches it: one sandbox held
# flock(LOCK_EX) on the standard library's os.py and another, a jail of its own, saw it held with LOCK_NB; an inotify
# watch on a stdlib file heard every open and read of it by another jail (tests/test_hostile_channels.py), so a
# notebook's hidden cases could hand their inputs to another student's public case running beside them, bit by bit.
# Locks are pretended in every mode: flock and fcntl's F_SETLK, F_SETLKW, F_OFD_SETLK and F_OFD_SETLKW succeed and lock
# nothing (a notebook's sqlite3 or a library's lock file works as alone within one process, as it is; several
# processes of one notebook sharing a database are no longer kept apart: three forked writers lost updates, the
# filter cannot tell a scratch file from a shared one), so no sandbox ever holds a lock another could see;
# watches are refused (EPERM): inotify, fanotify and fcntl's F_NOTIFY and F_SETLEASE (no notebook watches files).
# fanotify needs no privilege since Linux 5.13 (FAN_REPORT_FID, inode marks): a case's mark on os.py heard another
# process's reads of it, in a jail and as an unused uid, as inotify did (tests/test_hostile_channels.py).
# What stays shared: the page cache and the CPUs (README "What is not protected").
# The page cache can be written and read only as the kernel's own reads do: posix_fadvise(POSIX_FADV_DONTNEED), which
# needs no write access, evicted any page of a host file for every later sandbox (a jail's case emptied a stdlib file
# a root process then found not cached), and preadv2(RWF_NOWAIT) read a page's state without changing it (EAGAIN when
# not cached): an exact bit that could be written again and again, 64 of 64 from one jail to the next (session 23).
# So DONTNEED seems to succeed and evicts nothing (as the kernel's own advice may do nothing), preadv2's RWF_NOWAIT
# fails as a file system without it does (EOPNOTSUPP), and cachestat, mincore and Linux AIO (io_setup: IOCB's
# RWF_NOWAIT) are refused: the kernel's checks (a file the uid may write or owns) answer for an unused uid's
# sandbox already, not for the grader's uid's venv (rlimits mode without root). No notebook uses them (Python calls
# none, os.preadv's flags and os.posix_fadvise only when asked). What stays: a page no one has read since the
# machine started (or reclaimed) is read slowly once (~42 us against 1-2 cached), so each such page carries one bit
# once, by the first read's time; madvise(MADV_PAGEOUT) reclaims no page of a file the uid cannot write (Linux >= 6.3)
# and a jail filling its memory cgroup did not reclaim what it read of the interpreter's files (this machine).
_FADVISE = {"x86_64": 221, "aarch64": 223}   # fadvise64, fadvise64_64: by advice (fourth argument)
_PREADV2 = {"x86_64": 327, "aarch64": 286}   # by flags (sixth argument)
_CACHE_PROBES = {"x86_64": (451, 27, 206), "aarch64": (451, 232, 0)}   # cachestat, mincore, io_setup
# sysinfo(2), refused (EPERM) in every mode: the machine's count of threads, its free memory and load, the same for
# every sandbox whatever its namespaces (no file: a procfs of the jail's own hides the rest). A case starting 0-210
# threads in steps of 30 moved that count for another jail graded at once to read: 55 of 60 symbols of 3 bits right
# at 100 ms (~23-29 bits/s with 4 levels at 50 ms, load 10-12), enough to hand a hidden board (19 bits) from one
# student's hidden case to another's public one in a second. No sandboxed process of a correct notebook calls it
# (strace -f of a grade); os.getloadavg() then raises OSError, as where the kernel has no load averages, and glibc's
# sysconf(_SC_PHYS_PAGES) reads whatever its own buffer held. seccomp cannot answer it with other numbers.
_SYSINFO = {"x86_64": 99, "aarch64": 179}
POSIX_FADV_DONTNEED, RWF_NOWAIT = 4, 0x8
_FLOCK = {"x86_64": 73, "aarch64": 32}
# inotify_init, inotify_init1, inotify_add_watch; fanotify_init (a mark needs its descriptor)
_INOTIFY_CALLS = {"x86_64": (253, 254, 294, 300), "aarch64": (26, 27, 262)}
_LOCKS = (6, 7, 37, 38)       # fcntl's F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW: pretended
_WATCHES = (1024, 1026)       # fcntl's F_SETLEASE, F_NOTIFY: refused
# System V IPC (msg*, sem*, shm*) and POSIX message queues (mq_open), refused wherever the sandbox shares the host's
# IPC namespace (rlimits mode), whatever its uid. As the grader's uid, the uid's segments, semaphores and queues (the
# grader's, a TA's desktop's MIT-SHM images) are the student's to attach, read and change. As an unused uid (the
# grader root), a segment made with mode 0666 outlives the sandbox (no namespace ends with it, no uid's files are
# swept for it) and every later sandbox reads it: a hidden case's inputs reached the public case of a later sandbox
# (another student's, the reload before the student's own second runs, the next submission graded on that machine;
# Landlock on: it does not cover IPC), and what it held stayed on the host for good. A jail
# has its own IPC namespace, which dies with it.
_IPC_CALLS = {"x86_64": (29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220, 240),
              "aarch64": (186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 180)}
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
# The filter's refusals as incidents (grader.incidents): a call only hostile code makes (a keyring, a signal to a
# protected pid or kill(-1) as the grader's uid, another architecture's call) goes to the zygote as a seccomp user
# notification (Linux >= 5.0), which answers EPERM as the filter did and tells the grader which kind it refused
# (REFUSED, one byte each on a pipe the sandbox holds no end of): the kernel's word, never the child's. What honest
# code may try too is a plain EPERM and no incident (see _filter's "refuse"): scheduling but a nice value of 0 or
# more and the CPUs (pretended, see _SCHEDULING_CALLS), prlimit (of its own pid too), sockets (a dataset's
# download), IPC, tkill and SIGIO owners.
_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = {"x86_64": 317, "aarch64": 277}, 1, 1 << 3
SECCOMP_RET_USER_NOTIF = 0x7FC00000
REFUSED = ("keyring", "signal to a process not its own", "another architecture's call")
NOTIFY_RECV, NOTIFY_SEND = 0xC0502100, 0xC0182101   # SECCOMP_IOCTL_NOTIF_RECV / _SEND (struct sizes 80, 24)
SECCOMP_USER_NOTIF_FLAG_CONTINUE = 1


ANSWERS_SIGNALS = b"S"   # the handoff's byte of a listener whose sandbox's signals the zygote answers (else b"L")
SIGNAL_LOOK_DEPTH = 64   # parents looked up from a signal's target for the sandbox's runtime (honest code nests few)


def continues():
    """The kernel lets a user notification's call go on as it was made (SECCOMP_USER_NOTIF_FLAG_CONTINUE, Linux
    >= 5.5): only then can the zygote answer a sandbox's signals (see _SIGNAL_CALLS)."""
    numbers = [int(part) for part in os.uname().release.split("-")[0].split(".")[:2] if part.isdigit()]
    return len(numbers) == 2 and tuple(numbers) >= (5, 5)


def signal_call(nr, arch):
    """Whether a notified call (seccomp_notif's nr and arch) sends a signal: kill, tgkill, rt_(tg)sigqueueinfo."""
    machine = os.uname().machine
    known = _SCHEDULING_CALLS.get(machine)
    return known is not None and arch == known[0] and nr in _SIGNAL_CALLS[machine]


def _parent_and_group(pid):
    """A process's parent and process group, from /proc (None: no such process now)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), int(fields[2])
    except (OSError, ValueError, IndexError):
        return None


def _descends(pid, runtime):
    """`pid` is the sandbox's runtime or below it: every process of the sandbox is (the runtime is the subreaper
    of its orphans), and no other process can become so. None: no such process."""
    if pid == runtime:
        return True
    found = _parent_and_group(pid)
    if found is None:
        return None
    for _ in range(SIGNAL_LOOK_DEPTH):
        if found is None or found[0] <= 1:
            return False
        if found[0] == runtime:
            return True
        found = _parent_and_group(found[0])
    return False


def signal_target(runtime, target):
    """Where the signal of a sandbox whose runtime is `runtime` to `target` (the pid argument of kill, tgkill or
    rt_(tg)sigqueueinfo, as an int) goes: "inside" (a process of the sandbox, or a process group of its sessions),
    "outside" (refused: an incident) or "gone" (no such process or group: ESRCH, as the kernel says).

    A group -g is the sandbox's where its leader g lives in the sandbox (a group's number is its maker's pid, not
    given again while the group lives), or, its leader gone, where a process of the sandbox is in it: a group lies
    within one session, and the sandbox's sessions are made by its own processes (the runtime's setsid, a
    student's), whose every member descends from them."""
    if target == -1:
        return "outside"
    if target > 0:
        found = _descends(target, runtime)
        return "gone" if found is None else "inside" if found else "outside"
    group = -target
    leader = _descends(group, runtime)
    if leader is not None:
        return "inside" if leader else "outside"
    for pid in tree_pids(runtime, None):
        found = _parent_and_group(pid)
        if found is not None and found[1] == group:
            return "inside"
    return "gone"


def refused_kind(nr, arch):
    """The REFUSED index of a call the filter refused (seccomp_notif's nr and arch): what the zygote reports."""
    machine = os.uname().machine
    known = _SCHEDULING_CALLS.get(machine)
    if known is None or arch != known[0] or nr >= 0x40000000:
        return 2
    if nr in _KEYRING_CALLS[machine]:
        return 0
    return 1   # kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_open of a protected pid, kill(-1)


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _assemble(program):
    """A BPF program from instructions (code, k, jump if true, jump if false) whose jumps name labels ("allow",
    "deny", or a label the program sets as a plain string), turned into the relative offsets the kernel wants."""
    labels: dict = {}
    instructions: list = []
    for item in program:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    def jump(label, index):
        offset = 0 if label is None else labels[label] - index - 1
        if not 0 <= offset < 256:
            raise ValueError(f"a seccomp jump of {offset}")
        return offset

    return [_SockFilter(code, jump(true, index), jump(false, index), k)
            for index, (code, k, true, false) in enumerate(instructions)]


def _filter(own_uid, protected=(), network=True, notify=False, answered=False):
    """The seccomp program of keep_scheduling for this machine's architecture (None where it is not known here).
    `own_uid`: the sandbox runs as a uid of its own (a jail's, or an unused uid), so kill(-1) reaches only its
    processes (the runtime sweeps with it) and a socket reaches nothing of the uid's; else both are refused (see
    _KILL), and so are signalling the `protected` pids (process groups as negative numbers, for kill), tkill and
    setting an owner for SIGIO (see _SIGNAL_BY_PID), and System V IPC and POSIX message queues (_IPC_CALLS).
    `network` False (a sandbox in the host's network namespace, rlimits mode): socket() of any family but AF_UNIX
    is refused, so the sandbox has no network, as a jail has none (see _SOCKET). `notify`: a refusal only hostile
    code meets ("deny") is a user notification for the zygote to answer (SECCOMP_RET_USER_NOTIF), else EPERM.
    `answered` (with `notify`, not `own_uid`): every signal but 0, to any pid but 0 (kill), is such a notification,
    which the zygote lets through where it names a process of the sandbox (see _SIGNAL_CALLS)."""
    machine = os.uname().machine
    known = _SCHEDULING_CALLS.get(machine)
    if known is None or ctypes.sizeof(ctypes.c_void_p) != 8:   # a 32-bit interpreter on a 64-bit kernel: not ours
        return None
    arch, calls = known
    ld_abs, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    refuse, allow, pretend = 0x00050000 | errno.EPERM, 0x7FFF0000, 0x00050000   # SECCOMP_RET_ERRNO with 0: returns 0
    deny = SECCOMP_RET_USER_NOTIF if notify else refuse
    arg0, arg1, arg2, arg3, arg5 = 16, 24, 32, 40, 56   # arguments' low 32 bits (little-endian): a pid_t is an int
    program: list = [(ld_abs, 4, None, None), (jeq, arch, None, "deny"), (ld_abs, 0, None, None),
                     (jge, 0x40000000, "deny", None)]   # x32 (bit 30) -> deny
    # "deny": what only hostile code does, an incident where the zygote hears of it (`notify`); "refuse": what
    # honest code may try too (an io_uring library; prlimit of its own pid, which the filter cannot tell from
    # another's; tkill and SIGIO owners, refused whoever they name; System V IPC, which a jail allows; a socket),
    # refused with no word, as before; "pretend": success with nothing done (see _SCHEDULING_CALLS).
    setpriority, setaffinity = calls[0], calls[3]
    program += [(jeq, setaffinity, "pretend", None), (jeq, setpriority, "nice", None)]
    program += [(jeq, nr, "refuse", None) for nr in calls if nr not in (setpriority, setaffinity)]
    program += [(jeq, nr, "deny", None) for nr in _KEYRING_CALLS[machine]]
    program += [(jeq, _FLOCK[machine], "pretend", None), (jeq, _FCNTL[machine], "fcntl", None)]
    program += [(jeq, nr, "refuse", None) for nr in (*_INOTIFY_CALLS[machine], *_CACHE_PROBES[machine],
                                                  _SYSINFO[machine])]
    program += [(jeq, _FADVISE[machine], "fadvise", None), (jeq, _PREADV2[machine], "preadv2", None)]
    # call -> (the argument it is refused by, the values refused, how, the argument holding its signal or None): a
    # signal 0 sends nothing (os.kill(os.getppid(), 0) asks whether the parent lives), so it is let through at once.
    # "allow" after the last.
    checked: dict = {_PRLIMIT[machine]: (arg0, None, "refuse", None)}   # None: every value but 0
    if own_uid and not network:
        checked[_SOCKET[machine]] = (arg0, _AF_UNIX, "refuse", None)      # an int: every value but that one
    if not (own_uid and network):   # the host's IPC namespace (see _IPC_CALLS)
        program += [(jeq, nr, "refuse", None) for nr in _IPC_CALLS[machine]]
    if not own_uid:
        pids = sorted({pid & 0xFFFFFFFF for pid in protected if pid > 0})
        groups = sorted({pid & 0xFFFFFFFF for pid in protected if pid < -1})   # kill(-pgid)
        program += [(jeq, nr, "refuse", None) for nr in (_SOCKET[machine], _TKILL[machine])]
        checked[_KILL[machine]] = (arg0, (0xFFFFFFFF, *pids, *groups), "deny", arg1)
        # tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo (their signal: third, second, third argument), pidfd_open
        checked.update({nr: (arg0, tuple(pids), "deny", signal_at) for nr, signal_at in
                        zip(_SIGNAL_BY_PID[machine], (arg2, arg1, arg2, None), strict=True)})
        if notify and answered:   # the zygote looks at every one but kill(0) (see _SIGNAL_CALLS)
            checked[_KILL[machine]] = (arg0, 0, "deny", arg1)
            checked.update({nr: (arg0, None, "deny", signal_at) for nr, signal_at in
                            zip(_SIGNAL_CALLS[machine][1:], (arg2, arg1, arg2), strict=True)})
        checked[_PIDFD_SEND_SIGNAL[machine]] = (arg1, None, "refuse", None)   # its signal: every value but 0
        checked[_IOCTL[machine]] = (arg1, _SET_OWNER[1], "refuse", None)
    program += [(jeq, nr, f"check {nr}", None) for nr in checked]
    program += [(ret, allow, None, None)]
    # setpriority(which, who, nice): a negative nice is refused (as unprivileged), any other pretended
    program += ["nice", (ld_abs, arg2, None, None), (jge, 0x80000000, "refuse", "pretend")]
    # fcntl by its command: locks pretended, watches refused (see _LOCKS), and SIGIO owners where the uid is shared
    program += ["fcntl", (ld_abs, arg1, None, None)]
    program += [(jeq, command, "pretend", None) for command in _LOCKS]
    program += [(jeq, command, "refuse", None) for command in (*_WATCHES, *(() if own_uid else _SET_OWNER[0]))]
    program += [(ret, allow, None, None)]
    # the page cache's: an eviction pretended, a look that changes nothing refused (see _CACHE_PROBES)
    program += ["fadvise", (ld_abs, arg3, None, None), (jeq, POSIX_FADV_DONTNEED, "pretend", "allow")]
    program += ["preadv2", (ld_abs, arg5, None, None), (jset, RWF_NOWAIT, "unsupported", "allow")]
    for nr, (offset, refused, how, signal_at) in checked.items():
        program += [f"check {nr}"]
        if signal_at is not None:
            program += [(ld_abs, signal_at, None, None), (jeq, 0, "allow", None)]
        program += [(ld_abs, offset, None, None)]
        if refused is None:
            program += [(jeq, 0, "allow", how)]
        elif isinstance(refused, int):
            program += [(jeq, refused, "allow", how)]
        else:
            program += [(jeq, value, how, None) for value in refused] + [(ret, allow, None, None)]
    program += ["allow", (ret, allow, None, None), "deny", (ret, deny, None, None), "refuse", (ret, refuse, None, None),
                "pretend", (ret, pretend, None, None), "unsupported", (ret, 0x00050000 | errno.EOPNOTSUPP, None, None)]
    instructions = _assemble(program)
    filters = (_SockFilter * len(instructions))(*instructions)
    return filters, _SockFprog(len(instructions), filters)


# Built once as the zygote loads this module (each child only installs one): the jail's and an unused uid's, by
# (network, notify). The grader's uid's names the pids to protect, so a child builds it (rlimits mode without root).
_FILTERS = {(network, notify): _filter(True, network=network, notify=notify)
            for network in (True, False) for notify in (False, True)}


def keep_scheduling(own_uid=True, protected=(), network=True, handoff=None):
    """The student's threads keep the scheduling they were given: a nice value of 0 or more and sched_setaffinity
    seem to succeed and change nothing (as os.nice(5) and a library's pinning do in Jupyter), another policy
    (SCHED_IDLE) fails with EPERM, as raising a priority does unprivileged.
    Why: how long the sandbox waits for a CPU is the busy machine's credit (budget.py: its group's stall), and a
    thread at nice 19 or SCHED_IDLE beside any busy process waits nearly all the time, by its own choice: that
    had a spinning statement "machine too busy" (graded again at every run, never judged) instead of cut. The
    same filter refuses keyrings, prlimit of another process and, unless the sandbox has a uid of its own
    (`own_uid`), kill(-1), socket() and any signal but 0 to the `protected` pids (see _KEYRING_CALLS, _PRLIMIT, _KILL,
    _SIGNAL_BY_PID); `network` False (rlimits mode: the host's network namespace), socket() of every family but
    AF_UNIX (_AF_UNIX). A seccomp filter (inherited by every thread and fork, kept across exec); a foreign
    architecture's calls fail all (a 32-bit or x32 binary would get around the numbers). False where the
    architecture is not known here.

    `handoff`: a unix socket to the zygote. Where the kernel gives the filter a listener (SECCOMP_RET_USER_NOTIF),
    the refusals only hostile code meets wait for the zygote's EPERM, and the listener goes to it on it (REFUSED);
    else (Linux < 5.0) they are plain EPERM, as before. Not `own_uid`, on Linux >= 5.5, the zygote answers every
    signal too (_SIGNAL_CALLS), and the listener goes with ANSWERS_SIGNALS. The socket is closed either way."""
    answered = not own_uid and continues()   # the zygote answers this sandbox's signals (see _SIGNAL_CALLS)

    def made(notify):
        return _FILTERS[bool(network), notify] if own_uid else \
            _filter(False, protected, notify=notify, answered=notify and answered)
    found = made(False)
    if found is None:
        if handoff is not None:
            handoff.close()
        return False
    _check(prctl(PR_SET_NO_NEW_PRIVS, 1), "no_new_privs")
    if handoff is not None:
        try:
            listener = _libc.syscall(_SECCOMP[os.uname().machine], SECCOMP_SET_MODE_FILTER,
                                     SECCOMP_FILTER_FLAG_NEW_LISTENER, ctypes.byref(made(True)[1]))
            if listener >= 0:
                try:   # never kept here: a process holding its own listener could let its refused calls through
                    socket.send_fds(handoff, [ANSWERS_SIGNALS if answered else b"L"], [listener])
                finally:
                    os.close(listener)
                return True
        finally:
            handoff.close()
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(found[1]), 0, 0), "seccomp")
    return True


def capabilities_effective():
    """The effective capability mask of this process, from /proc (0 when the jail holds)."""
    for line in read_small("/proc/self/status").splitlines():
        if line.startswith(b"CapEff:"):
            return int(line.split()[1], 16)
    return -1


def hand_over(folder, uid):
    """Give the scratch folder the grader made to the sandbox's uid, as root, without following any path a
    student could have swapped (a symlink put in its place): opened with O_NOFOLLOW, checked to be a real
    folder of root's that no one else may write, and changed through that descriptor."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        status = os.fstat(fd)
        if status.st_uid != os.geteuid() or status.st_mode & 0o022:
            raise PermissionError(errno.EPERM, f"{folder} is not the grader's own folder")
        os.fchown(fd, uid, uid)
    finally:
        os.close(fd)


# Landlock (Linux >= 5.13, unprivileged): what rlimits mode has instead of a built root.
_LANDLOCK_CREATE, _LANDLOCK_ADD, _LANDLOCK_RESTRICT = 444, 445, 446
_READ = 1 | 1 << 2 | 1 << 3          # execute, read a file, read a folder
_NET_TCP = 1 | 2                     # LANDLOCK_ACCESS_NET_BIND_TCP, _CONNECT_TCP (ABI >= 4)
_SCOPES = 1 | 2                      # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, _SIGNAL (ABI >= 6)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi():
    """The Landlock ABI version the kernel offers (0: none, or disabled)."""
    version = _libc.syscall(_LANDLOCK_CREATE, None, 0, 1)   # LANDLOCK_CREATE_RULESET_VERSION
    return max(0, version)


def landlock_held(abi):
    """What a Landlock domain of ABI `abi` keeps from the student beyond the file system, as words for the facts:
    `tcp` (no TCP bind or connect: ABI >= 4), `signals` (no signal to a process outside the sandbox: the grader,
    its zygote, the TA's shell, all of the same uid in rlimits mode without root; ABI >= 6) and `abstract unix
    sockets` (none of a process outside it can be reached; ABI >= 6). ptrace and what it guards (/proc/PID/mem,
    environ, fd) stay inside the domain from ABI 1."""
    return [word for word, needed in (("ptrace", 1), ("tcp", 4), ("signals", 6), ("abstract unix sockets", 6))
            if 0 < needed <= abi]


def landlock(read_paths, write_paths):
    """Restrict this process and its descendants to reading `read_paths` and reading and writing
    `write_paths` (and nothing else of the file system, whatever its modes say), with no TCP (ABI >= 4: the
    jail has no network either) and, from ABI 6, no signal to and no abstract unix socket of any process
    outside the sandbox: without root the student runs as the grader's own uid, and could otherwise SIGSTOP or
    kill the grader, its zygote or the TA's shell (kill(-1)), or talk to whatever listens on the machine. Needs
    no privilege, only no_new_privs (set here). Returns the ABI used, or 0 when the kernel has no Landlock
    (nothing changed)."""
    abi = landlock_abi()
    if abi <= 0:
        return 0
    everything = (1 << 13) - 1 | (1 << 13 if abi >= 2 else 0) | (1 << 14 if abi >= 3 else 0)
    file_rights = 0b111 | (1 << 14 if abi >= 3 else 0)
    attr = _RulesetAttr(everything, _NET_TCP if abi >= 4 else 0, _SCOPES if abi >= 6 else 0)
    # The kernel reads only the fields the size names: an older one refuses a larger struct it does not know.
    size = ctypes.sizeof(ctypes.c_uint64) * (3 if abi >= 6 else 2 if abi >= 4 else 1)
    ruleset = _libc.syscall(_LANDLOCK_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        error = ctypes.get_errno()
        raise JailError(error, f"landlock_create_ruleset: {os.strerror(error)}")
    try:
        for paths, rights in ((read_paths, _READ), (write_paths, everything)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue   # a path this machine lacks: nothing to allow
                try:
                    allowed = rights if os.path.isdir(path) else rights & file_rights
                    rule = _PathBeneath(allowed, fd)
                    _check(_libc.syscall(_LANDLOCK_ADD, ruleset, 1, ctypes.byref(rule), 0), f"landlock {path}")
                finally:
                    os.close(fd)
        _check(prctl(PR_SET_NO_NEW_PRIVS, 1), "no_new_privs")
        _check(_libc.syscall(_LANDLOCK_RESTRICT, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi


def landlock_paths(trees, scratch):
    """What an rlimits-mode child may read (system trees, the interpreter's, a few files of /etc, a few
    devices, /proc) and write (its scratch, the write-only devices): the allowlist root's contents."""
    read = [*SYSTEM_TREES, *trees, *ETC_FILES, "/etc/passwd", "/etc/group", "/etc/hosts", "/proc",
            *(f"/dev/{device}" for device in DEVICES)]
    write = [path for path in (scratch, "/dev/null", "/dev/zero", "/dev/full") if path]
    return read, write


# A folder of a tmpfs holds no name when its size is this: the kernel (mm/shmem.c, since Linux 2.4) makes a folder
# 2 * BOGO_DIRENT_SIZE (20) long, adds 20 for each name made in it (a file, folder, link, node or hard link, a
# rename's whiteout) and takes 20 off for each one removed; no call of the student's sets a folder's size.
EMPTY_TMPFS_FOLDER = 40


def empty_folder(path, tmpfs=None, made=None):
    """Remove everything under `path` (the scratch between exercises), whatever modes the student set, through
    this module's own references (see _listdir), never through a link and never into another device (a read-only
    tree bound into the scratch). As remove_tree, by descriptors (one open at a time, the way up checked) and a
    list of folders, not by paths and a call per level: a chain of ~1,000 folders (the scratch's `files`) made the
    runtime's recursive walk raise RecursionError after the load (the child died at every reload), and a chain
    of 20 folders of 250-character names, past PATH_MAX as a path, was left with its files for the next exercise
    (ENAMETOOLONG at each, swallowed: mend's /tmp/mend/longp). The scratch itself is made its owner's to write
    first: a case that took the write bit off its working folder (os.chmod(".", 0o500)) left its files to the
    next exercise, in a jail and in rlimits mode (the runtime runs as the student's uid, never with privileges).

    `tmpfs`: the device of a tmpfs that `path` is on when it is the jail's scratch (_scratch; None elsewhere). A
    folder there whose size says it holds no name (EMPTY_TMPFS_FOLDER) is left as it is: most exercises write
    nothing, and the walk of an empty folder took 12 system calls (its open, the listing's own duplicate, reads,
    seek and closes), ~10 us, for each of a jail's two folders at every exercise's end.

    `made`: the folder as the runtime found it (folder_as_made; None: its entries only). Its mode and extended
    attributes are put back before the shortcut, its times after the walk: the folder itself, not only what it
    holds, was a carrier from one exercise to the next (a user.* attribute of 64 kB a name, the times set by
    os.utime, its mode's bits; tests/test_hostile_carriers.py). The times are set at every call, written or not:
    that also moves the folder's change time (which no call sets, but each change of the folder's moves to the
    clock's time, one the exercise chose) to the boundary's, which the next exercise's clock tells it anyway."""
    status = open_to_owner(path) if made is None else _put_back(path, made)
    if not (tmpfs is not None and status is not None and status.st_dev == tmpfs
            and status.st_size == EMPTY_TMPFS_FOLDER):
        try:
            current = _open(path, _FOLDER_FLAGS)
        except OSError:
            current = None
        if current is not None:
            _empty_below(current, _emptied)
    if made is not None:
        try:
            _utime(path, ns=made[1], follow_symlinks=False)
        except OSError:
            pass


def folder_as_made(path):
    """What empty_folder puts back on the folder `path` (the scratch) at each call, read as the runtime starts, before
    any code of the student's: (its mode with its owner's bits, (its access and modification times in ns), its
    extended attributes as (name, value) pairs, None where the file system keeps none). None: not a folder.
    Immutable: nothing of it is an object an exercise could add to."""
    try:
        status = _lstat(path)
    except OSError:
        return None
    if not _S_ISDIR(status.st_mode):
        return None
    try:
        attributes = tuple((name, _getxattr(path, name, follow_symlinks=False))
                           for name in _listxattr(path, follow_symlinks=False))
    except OSError:   # ENOTSUP: a file system without them
        attributes = None
    return _S_IMODE(status.st_mode) | 0o700, (status.st_atime_ns, status.st_mtime_ns), attributes


def _put_back(path, made):
    """open_to_owner's, for a folder whose state as made is known: its mode as made (the write bit a case took off,
    and any other bit it set), and its extended attributes as made (one flistxattr when there were none: the
    usual; each name an exercise added removed, each it changed or removed written back). Its lstat, as
    open_to_owner's (taken before: the mode and attributes do not move the size the shortcut reads)."""
    mode, _, attributes = made
    try:
        status = _lstat(path)
        if not _S_ISDIR(status.st_mode):
            return None
        if _S_IMODE(status.st_mode) != mode:
            _chmod(path, mode)
    except OSError:
        return None
    if attributes is not None:
        try:
            names = _listxattr(path, follow_symlinks=False)
        except OSError:
            names = []
        if names or attributes:
            _attributes_back(path, names, attributes)
    return status


def _attributes_back(path, names, attributes):
    """The extended attributes of the folder `path`, listed as `names`, made `attributes` again (best effort: one
    the owner may not remove, a security.* label, was there when it was made, and is not one an exercise set)."""
    kept = dict(attributes)
    for name in names:
        try:
            if name not in kept:
                _removexattr(path, name, follow_symlinks=False)
            elif _getxattr(path, name, follow_symlinks=False) != kept[name]:
                _setxattr(path, name, kept[name], follow_symlinks=False)
        except OSError:
            pass
    for name in kept.keys() - set(names):
        try:
            _setxattr(path, name, kept[name], follow_symlinks=False)
        except OSError:
            pass


def open_to_owner(path):
    """Give the folder `path` back its owner's read, write and search bits where the student took them off (the
    runtime, which empties the scratch and puts the course's data files back in it, runs as the student's uid); a
    link or a file is left as it is. The folder's lstat (None for anything but a folder, or none)."""
    try:
        status = _lstat(path)
        if not _S_ISDIR(status.st_mode):
            return None
        if status.st_mode & 0o700 != 0o700:
            _chmod(path, _S_IMODE(status.st_mode) | 0o700)
        return status
    except OSError:
        return None


def _empty_below(current, emptied):
    """Empty the folder open as the descriptor `current` (closed at the end), however deep: `emptied(fd, stat)`
    unlinks what a folder holds but folders and gives the names of those to enter. The way down is a list of names
    with one descriptor open; the way up is "..", checked to be the folder it came from (a folder moved meanwhile
    ends the walk: what is left stays). Whether the walk came back up to `current` (empty_folder, remove_tree)."""
    try:
        here = _fstat(current)
        stack = [(None, emptied(current, here), (here.st_dev, here.st_ino))]   # (name, folders left, identity)
        while stack:
            name, pending, _ = stack[-1]
            if pending:
                below = pending.pop()
                try:
                    inner = _open(below, _FOLDER_FLAGS, dir_fd=current)
                except OSError:
                    continue
                _close(current)
                current = inner
                here = _fstat(current)
                stack.append((below, emptied(current, here), (here.st_dev, here.st_ino)))
                continue
            stack.pop()
            if name is None:
                return True
            parent = _open("..", _FOLDER_FLAGS, dir_fd=current)
            _close(current)
            current = parent
            there = _fstat(current)
            if (there.st_dev, there.st_ino) != stack[-1][2]:   # moved meanwhile: what is left stays
                return False
            try:
                _rmdir(name, dir_fd=current)
            except OSError:
                pass
        return True
    except OSError:
        return False
    finally:
        _close(current)


def _emptied(fd, folder):
    """Unlink what the folder open as `fd` (whose stat is `folder`) holds but folders (a link as a link); the names
    of its folders on its device, made the owner's to enter and empty (whatever modes the student set)."""
    folders: list[str] = []
    try:
        names = _listdir(fd)
    except OSError:
        return folders
    for name in names:
        try:
            status = _lstat(name, dir_fd=fd)
            # Another device, or the folder itself again (os.path.ismount's two tests): a read-only tree bound into
            # the scratch, or the way to one.
            if status.st_dev != folder.st_dev or status.st_ino == folder.st_ino:
                continue
            if _S_ISDIR(status.st_mode):
                try:
                    _chmod(name, 0o700, dir_fd=fd)
                except OSError:
                    pass
                folders.append(name)
            else:
                _unlink(name, dir_fd=fd)
        except OSError:
            pass
    return folders


def _clear(fd):
    """Unlink what in the folder open as `fd` is not a folder (a link is removed as a link); its folders' names.
    Without root (rlimits mode under a grader that is not root: the student's uid is ours) each folder is made ours
    to enter and empty first: a student's folder of mode 0o500 or 0 kept its files, and the sandbox's scratch stayed
    in the grader's temp folder. Root needs no mode, and changes none (a link swapped in would be followed)."""
    folders = []
    owner = os.geteuid() != 0
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if owner:
                            try:
                                os.chmod(entry.name, 0o700, dir_fd=fd)
                            except OSError:
                                pass
                        folders.append(entry.name)
                    else:
                        os.unlink(entry.name, dir_fd=fd)
                except OSError:
                    pass
    except OSError:
        pass
    return folders


def tree_use(path: str, most_entries: int) -> tuple[int, int]:
    """The bytes the file system gave what is under `path` (allocated blocks: a sparse file costs what it wrote)
    and how many entries it holds, counting no further than `most_entries + 1` entries, so that a scratch of a
    million empty files costs the zygote's look at it what a full one costs. Never through a link, never into
    another device; what vanishes meanwhile is not counted. The rlimits-mode scratch is a host folder, and this is
    how its size is bounded in all (zygote.Zygote.watch): a tmpfs needs privileges rlimits mode does not have."""
    try:
        top = os.lstat(path)
    except OSError:
        return 0, 0
    used, entries, pending = 0, 0, [path]
    while pending and entries <= most_entries:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    entries += 1
                    if entries > most_entries:
                        break
                    try:
                        status = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if status.st_dev != top.st_dev:
                        continue
                    used += status.st_blocks * 512
                    if stat.S_ISDIR(status.st_mode):
                        pending.append(entry.path)
        except OSError:
            continue
    return used, entries


def tree_pids(root: int, procs: str | None, most: int = 4096) -> list[int]:
    """The processes of a sandbox: its cgroup's (the `cgroup.procs` file `procs`) where it has one, else `root`
    and its descendants (the runtime is their subreaper: an orphan stays in its tree). At most `most`."""
    if procs:
        try:
            with open(procs, "rb") as listing:
                return [int(pid) for pid in listing.read().split()[:most]]
        except (OSError, ValueError):
            pass
    found: list[int] = []
    pending = [root]
    while pending and len(found) < most:
        pid = pending.pop()
        found.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children", "rb") as children:
                    pending.extend(int(child) for child in children.read().split())
            except (OSError, ValueError):
                pass
    return found[:most]


def held_unlinked(pids: list[int], device: int, most_descriptors: int = 4096) -> int:
    """The bytes of the files on `device` that no name reaches any more (unlinked, or O_TMPFILE) but that the
    processes `pids` hold open: a scratch's use that tree_use cannot see. Each file once, at most
    `most_descriptors` descriptors looked at (a process of the sandbox may hold RLIMIT_NOFILE of them)."""
    seen: set[int] = set()
    used = looked = 0
    for pid in pids:
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for descriptor in descriptors:
            looked += 1
            if looked > most_descriptors:
                return used
            try:
                status = os.stat(f"/proc/{pid}/fd/{descriptor}")
            except OSError:
                continue
            if status.st_dev == device and status.st_nlink == 0 and stat.S_ISREG(status.st_mode) \
                    and (status.st_ino not in seen):
                seen.add(status.st_ino)
                used += status.st_blocks * 512
    return used


# Where any uid may write on a usual system: without Landlock (a Gradescope 4.14 kernel) an unused uid of rlimits
# mode writes there as well as in its scratch (Zygote.watch counts it, and removes it when the sandbox ends).
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")


def _owned(folders, uid):
    """The entries directly in `folders` that `uid` owns (lstat: a link is the link)."""
    found = []
    for folder in folders:
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    try:
                        if entry.stat(follow_symlinks=False).st_uid == uid:
                            found.append(entry)
                    except OSError:
                        pass
        except OSError:
            pass
    return found


def owned_use(folders, uid: int, most_entries: int) -> tuple[int, int]:
    """What `uid` put directly in `folders` (WORLD_WRITABLE), as tree_use counts it: bytes and entries."""
    used = entries = 0
    for entry in _owned(folders, uid):
        if entries > most_entries:
            break
        entries += 1
        status = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(status.st_mode):
            more, inside = tree_use(entry.path, most_entries - entries)
            used, entries = used + more + status.st_blocks * 512, entries + inside
        else:
            used += status.st_blocks * 512
    return used, entries


def remove_owned(folders, uid: int) -> None:
    """Remove what `uid` (a sandbox's unused uid, whose processes are gone) left directly in `folders`, never
    through a link."""
    if uid < UID_BASE:
        return
    for entry in _owned(folders, uid):
        try:
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


# Why the zygote killed an rlimits-mode sandbox (zygote.Zygote.watch), as the byte after its exit status on the
# status pipe (0: it did not): the files it counted went over the scratch's bound in its folder, with what its
# unused uid owns in WORLD_WRITABLE, or with the files its processes unlinked and hold open. The grader says why
# a case died from this fact (supervisor.Jail.over); a second walk of the folder missed the last two.
OVER_LIMIT = ("folder", "shared", "unlinked")


def own_folder(path: str) -> bool:
    """A real folder (not a symlink) owned by this process's uid and writable by no one else: the only kind of
    leftover a grader or its zygote removes."""
    try:
        status = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid() and not status.st_mode & 0o022


def remove_tree(path: str) -> None:
    """Remove the folder `path` and what is in it, however deep, never through a link: what the grader and the
    zygote remove of a sandbox's scratch and of a dead grader's temp folder. shutil.rmtree recurses once per level:
    a student's scratch 1,000 folders deep raised RecursionError, ignore_errors or not, out of the sandbox's end,
    the zygote's cleanup and every later grader's sweep of leftovers (each then failed to start a sandbox). Here
    the walk is empty_folder's (_empty_below: by descriptors, a folder moved meanwhile ends it), without its device
    test; `path` goes last, when the walk came back to it. What cannot be removed stays. Modes change only without
    root (see _clear): `path` and each folder below are made the owner's before they are entered."""
    if os.geteuid() != 0:
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass
    try:
        current = os.open(path, _FOLDER_FLAGS)
    except OSError:
        return
    if not _empty_below(current, lambda fd, _: _clear(fd)):
        return
    try:
        os.rmdir(path)
    except OSError:
        pass


def needed_paths(scratch):
    """What the child must see: its interpreter (the executable's folders, and the folder of a shared
    libpython), the standard library with lib-dynload, the site-packages it imports from, and its scratch.
    Not the whole prefix: the base interpreter's own site-packages, include/ and share/ stay out (see
    unrelated_site_packages for what is covered inside these trees)."""
    import site
    import sys
    import sysconfig
    paths = {scratch, os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths().get(key, ""))
    library = sysconfig.get_config_var("LIBDIR") or ""
    if sysconfig.get_config_var("Py_ENABLE_SHARED") and os.path.isfile(
            os.path.join(library, sysconfig.get_config_var("INSTSONAME") or "-")):
        paths.add(library)
    try:
        paths.update(site.getsitepackages())
    except AttributeError:  # pragma: no cover - virtualenv's old site.py
        pass
    return sorted(os.path.realpath(p) for p in paths if p and os.path.isdir(p))


@functools.cache   # the interpreter's own layout: the zygote asks once, every child it forks knows
def unrelated_site_packages():
    """The base interpreter's site-packages when a venv without system site-packages runs us: it lies
    inside the standard library's tree, yet nothing on sys.path comes from it. The jail covers it."""
    import site
    import sys
    import sysconfig
    if sys.prefix == sys.base_prefix:
        return ()
    wanted = {os.path.realpath(p) for p in site.getsitepackages()}
    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})
    found = {os.path.realpath(base[key]) for key in ("purelib", "platlib") if base.get(key)}
    return tuple(sorted(p for p in found - wanted if os.path.isdir(p) and not any(_inside(w, p) for w in wanted)))


def readable_by_anyone(path):
    """True when a uid that owns nothing could read `path`: every folder above it searchable by others."""
    import stat
    path = os.path.realpath(path)
    try:
        if not os.stat(path).st_mode & stat.S_IROTH:
            return False
        while path != "/":
            path = os.path.dirname(path)
            if not os.stat(path).st_mode & stat.S_IXOTH:
                return False
    except OSError:
        return False
    return True


@functools.cache   # as unrelated_site_packages: sysconfig and a realpath of every tree, once per zygote
def python_trees():
    """The interpreter's own trees (prefixes, stdlib, site-packages), for the allowlist (a tuple: shared)."""
    return tuple(allowlist(needed_paths("")))
