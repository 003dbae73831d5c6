"""Run an untrusted program (a student's Jupyter kernel, a grading sandbox) confined, in layers.

    python -I attention_course/confinement/confine.py run --policy POLICY.json -- ARGV...
    python -I attention_course/confinement/confine.py probe            # which layers work on this machine, as JSON

The process started this way is the *supervisor*: trusted code with the grader's rights. It checks
that every requested layer can be applied (else it exits with ``EXIT_UNAVAILABLE`` = 97 and one
line ``confine: LAYER: reason`` on stderr, and the program never runs), starts the child, applies
the layers to it and only then execs the untrusted argv. It stays as the child's parent: it is
non-dumpable, a child subreaper (orphans come back to it), forwards SIGINT/SIGTERM/SIGHUP to the
confined main process, watches the number of processes, their memory (``memory_bytes``: resident
sizes every 0.1 s, proportional sizes once those pass the cap: a watch that needs no cgroup
delegation) and the size of the ``write`` directories
(``EXIT_LIMIT`` = 98 and a ``confine: limit: ...`` line when one is exceeded), kills every process
left when the main process ends, and exits with the child's exit status (128+N for signal N).
SIGUSR1 to the supervisor kills the confined tree at once (``run`` uses it on a timeout). When the
supervisor's own parent dies (a grader killed), it acts as on SIGTERM: nothing outlives the grader.
When it ends, the supervisor writes what happened as one JSON object beside the policy file
(``status_path``; ``read_status`` reads it): the outcome (exited, unavailable, limit, exec), the
layer, the reason and the exit code. The grader decides from that file, which the confined
program cannot write, never from its stderr or its exit code.

Always, whatever the layers: RLIMIT_FSIZE / RLIMIT_NOFILE / RLIMIT_CORE=0 (and RLIMIT_NPROC where
the kernel applies it), a new session, PR_SET_PDEATHSIG=SIGKILL, PR_SET_NO_NEW_PRIVS, and, when
the child would still run as uid 0, an empty capability bounding set, no permitted/effective/
inheritable/ambient capabilities and locked securebits (NOROOT, KEEP_CAPS and AMBIENT_RAISE off).
A uid-0 child (root supervisor, any layer but not ``user``) also gets a small seccomp filter:
it owns every root-owned file and Landlock does not cover metadata, so chmod and utime calls are
ignored (they return 0 and change nothing), chown/xattr changes and the keyring syscalls fail
with EPERM (``user`` avoids the uid-0 child altogether).

Layers (``Policy.layers``, any subset of ``LAYERS``, stacked):

``landlock``
    A Landlock ruleset (`attention_course/confinement/linux.py`) applied right before exec: every filesystem
    right the running ABI knows is handled; read+execute on ``policy.read`` and the system paths
    (/usr, /lib*, /bin, /sbin, a few /etc files, /proc, /sys), all rights on ``policy.write``,
    read/write on /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom; TCP bind/connect
    handled with no rule (ABI >= 4); abstract unix sockets and signals scoped to the sandbox
    (ABI >= 6). Plus a seccomp-BPF filter (audit arch checked, x32 refused): socket() fails with
    EACCES for every domain but AF_UNIX (AF_NETLINK with EOPNOTSUPP: libzmq, and so ipykernel,
    aborts on any other error from getifaddrs; its IOPub pipe for forked subprocesses then just
    fails to bind on 127.0.0.1, so output of multiprocessing children is lost); io_uring,
    ptrace, process_vm_readv/writev, bpf, perf_event_open, userfaultfd, keyctl/add_key/
    request_key, kexec, (f)init_module/delete_module, mount/umount2/pivot_root and the new mount
    API, unshare/setns and clone() with namespace flags fail with EPERM; clone3 fails with
    ENOSYS (glibc falls back to clone).
    Needs: Linux >= 5.13 with landlock in the LSM list (filesystem), >= 6.7 for the TCP rules,
    >= 6.12 for signal and abstract-socket scoping. Outside it: the process tree and /proc stay
    the host's (processes can be listed, cmdlines read); before Landlock ABI 9 it cannot stop
    connect() to a pathname unix socket of the host that the uid may write (e.g. a root-owned
    daemon socket when the child is uid 0 without the ``user`` layer); before ABI 6 a uid-0
    child could signal other uid-0 processes; /dev/shm is not writable (no POSIX semaphores).

``bwrap``
    The child runs through bubblewrap: new pid, net, ipc, uts and cgroup namespaces (plus a user
    namespace when the supervisor is not root), ``--die-with-parent``, ``--new-session``, a fresh
    read-only root made of ``--ro-bind`` mounts of the system paths and ``policy.read``,
    ``--bind`` mounts of ``policy.write`` (same paths inside and out, so unix socket and file
    paths mean the same on both sides), a new /proc for the pid namespace, a minimal read-only
    /dev, ``--clearenv`` + ``policy.env``. The pid namespace guarantees that every process left
    dies with the sandbox, even when the supervisor itself is SIGKILLed. The inner stage
    (rlimits, uid drop, Landlock, seccomp, capability drop, exec) is inner.py, run by the base
    interpreter inside the sandbox from an archive in a sealed memfd (``python -I -S
    /proc/self/fd/N``): the student cannot read it as a file, and the fd is closed before exec. Needs: /usr/bin/bwrap
    (apt-get install bubblewrap); unprivileged user namespaces unless the supervisor is root
    (Debian: kernel.unprivileged_userns_clone; Ubuntu 24.04 restricts them through AppArmor,
    kernel.apparmor_restrict_unprivileged_userns). /proc/sys, /proc/sysrq-trigger and the like
    are covered read-only (bwrap leaves /proc/sys writable, and a uid-0 child could write
    kernel.core_pattern). bwrap itself (the sandbox's pid 1) runs with an empty environment, and
    the seccomp sandbox filter of ``landlock`` is applied with this layer too (no sockets but unix
    ones, even on the sandbox's own loopback). Outside it: without ``user`` a root supervisor's
    child stays uid 0 (without capabilities) inside.

``user``
    When the supervisor runs as root, the program runs as the unprivileged system user
    ``attention-sandbox`` (created with useradd when missing; or ``policy.uid``/``gid``); the
    ``write`` directories are chowned to it first, and RLIMIT_NPROC becomes a hard bound (it
    counts every task of that uid, so sandboxes that run at the same time share it unless they get
    their own uid). Needs: root. Outside it: the user must be able to reach the interpreter; on
    this project's machines /root is mode 0700 and the venv's Python lives under /root, so
    ``user`` works only together with ``bwrap`` (which recreates the path); alone it does not
    stop two sandboxes of the same uid from signalling or ptracing each other (``landlock`` or
    ``bwrap`` do).

``[]`` (no layer) is unconfined: only the rlimits, the session and the subreaper sweep.

The package is split by stage; this file is the supervisor's command line and the API the grader
uses:

- policy.py: the `Policy`, the layers, the exit codes, the system paths
- preflight.py: every layer checked before the program starts; the program's account
- supervisor.py: the trusted parent, its watches and its sweep
- inner.py: the inner stage, the last trusted code in the program's process
- bubblewrap.py: bubblewrap's command line and the inner stage's archive
- status.py: the status file the grader decides from
- launch.py: the policy file, the command line, `run`, `stop`
- probe.py: which layers work on this machine

The supervisor needs the standard library, psutil (limits.py) and libseccomp (seccomp_filter.py,
through pyseccomp); the seccomp filters are built there and handed to the inner stage as BPF
bytes, which it installs with prctl. The inner stage needs the standard library only.
``probe()`` proves each layer by really running ``python -c "import sys"`` confined.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a script (``python -I confine.py``): import the package it belongs to
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from attention_course.confinement.confine import main

    sys.exit(main())

import json

from .launch import SCRIPT, command, run, stop, write_policy  # noqa: F401
from .policy import EXIT_LIMIT, EXIT_UNAVAILABLE, LAYERS, Policy, Unavailable, default_read_paths  # noqa: F401
from .probe import probe, usable  # noqa: F401
from .status import Report, read_status, status_path  # noqa: F401
from .supervisor import GRACE_SECONDS, supervise  # noqa: F401

USAGE = "usage: confine.py run --policy POLICY.json -- ARGV... | confine.py probe\n"


def main(argv: list[str] | None = None) -> int:
    """The supervisor's command line: ``run --policy POLICY.json -- ARGV...`` or ``probe``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["probe"]:
        python = args[args.index("--python") + 1] if "--python" in args else sys.executable
        print(json.dumps(probe(python), indent=1))
        return 0
    if args[:1] == ["run"] and "--" in args:
        sep = args.index("--")
        opts, program = args[1:sep], args[sep + 1 :]
        report = Report()
        if len(opts) != 2 or opts[0] != "--policy":
            return report.fail("usage", "confine.py run --policy POLICY.json -- ARGV...", 2)
        try:
            with open(opts[1]) as f:
                policy = Policy.from_json(f.read())
        except (OSError, ValueError, TypeError) as e:
            code = report.fail("policy", f"cannot read {opts[1]}: {e}")
        else:
            code = supervise(policy, program, report)
        if opts[1]:
            report.write(status_path(opts[1]), code)
        return code
    sys.stderr.write(USAGE)
    return 2


if __name__ == "__main__":
    sys.exit(main())
