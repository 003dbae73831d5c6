"""The supervisor: the trusted parent of a confined program (see confine.py for what it
guarantees). It checks the layers (preflight.py), starts the program through the inner stage,
directly or inside bubblewrap, watches the processes, memory and disk of the confined tree, and
kills the whole tree when the program ends, a limit is passed, or the grader goes.
"""

from __future__ import annotations

import json
import os
import select
import signal
import stat
import subprocess
import sys
import time

from . import limits, linux
from .bubblewrap import Host, bwrap_argv, explain_bwrap, memfd_source, ns_child
from .inner import inner_stage
from .policy import EXIT_LIMIT, EXIT_UNAVAILABLE, Policy, Unavailable, dedupe, system_read
from .preflight import chown_tree, preflight
from .status import Report

GRACE_SECONDS = 3.0  # after SIGTERM/SIGHUP is forwarded, before the tree is killed
TICK = 0.1  # process-count watch interval
DU_EVERY = 0.5  # scratch-size watch interval
MEMORY_EVERY = 0.1  # memory watch interval


def du(paths: list[str]) -> int:
    """Bytes on disk under `paths`, each inode counted once."""
    seen = set()
    total = 0
    stack = list(paths)
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
                if stat.S_ISDIR(st.st_mode):
                    stack.append(e.path)
    return total


class Supervisor:
    """The trusted parent of one confined program: it applies the policy, starts the program,
    watches its limits, forwards signals, and leaves nothing behind when the program ends."""

    def __init__(self, policy: Policy, argv: list[str], report: Report):
        self.policy, self.argv, self.report = policy, argv, report
        self.main_pid: int | None = None  # the process we wait for (fork child or bwrap)
        self.target_pid: int | None = None  # the confined main process, for signals
        self.target_fd: int | None = None
        self.pending: list[int] = []
        self.term_deadline: float | None = None
        self.kill_now = False
        self.exit_status: int | None = None
        self.messages: list[str] = []
        self.started = False
        self.info: dict = {}
        self.bwrap_err = b""
        self.limit: str | None = None
        self.inner_pid: int | None = None

    # -- signals --------------------------------------------------------------------------------
    def _on_signal(self, sig, frame):
        if sig == signal.SIGUSR1:
            self.kill_now = True
            return
        if sig in (signal.SIGTERM, signal.SIGHUP) and self.term_deadline is None:
            self.term_deadline = time.monotonic() + GRACE_SECONDS
        if self.target_fd is None:
            self.pending.append(sig)
        else:
            self._forward(sig)

    def _forward(self, sig):
        try:
            signal.pidfd_send_signal(self.target_fd, sig)
        except OSError:
            pass

    def _set_target(self, pid: int):
        try:
            self.target_fd = os.pidfd_open(pid)
        except OSError:
            return
        self.target_pid = pid
        for sig in self.pending:
            self._forward(sig)
        self.pending.clear()

    # -- the tree -------------------------------------------------------------------------------
    def _reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.main_pid and self.exit_status is None:
                code = os.waitstatus_to_exitcode(status)
                self.exit_status = code if code >= 0 else 128 - code

    def descendants(self) -> list:
        """Every process below the supervisor (psutil processes)."""
        return limits.below(os.getpid())

    def kill_tree(self):
        if self.info.get("child-pid"):
            try:
                # bwrap's pid 1: its death takes the whole pid namespace with it
                os.kill(self.info["child-pid"], signal.SIGKILL)
            except OSError:
                pass
        for _ in range(100000):
            kids = self.descendants()
            limits.kill(kids)
            alive = self._reap()
            if not kids and not alive:
                return
            time.sleep(0.002)

    # -- start ----------------------------------------------------------------------------------
    def run(self) -> int:
        policy = self.policy
        self.parent = os.getppid()  # when it goes (a grader killed), the confined tree goes too
        try:
            linux.not_dumpable()
            linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        except OSError as e:
            return self.report.fail("setup", f"prctl failed ({e.strerror})")
        try:
            resolved = preflight(policy)
            if resolved["uid"] is not None and policy.chown_write:
                for w in policy.write:
                    chown_tree(w, resolved["uid"], resolved["gid"])
        except Unavailable as e:
            return self.report.fail(e.layer, e.reason)
        except OSError as e:
            return self.report.fail("setup", str(e))
        cfg = {
            "argv": self.argv,
            "env": dict(policy.env),
            "cwd": policy.cwd,
            "layers": list(policy.layers),
            "write": dedupe(policy.write),
            "ll_read": dedupe(system_read() + list(policy.read) + ["/proc", "/sys"]),
            "max_file_bytes": policy.max_file_bytes,
            "max_open_files": policy.max_open_files,
            "nproc": resolved["nproc"],
            "nproc_shared": resolved["nproc_shared"],
            "userns": resolved["userns"],
            "uid": resolved["uid"],
            "gid": resolved["gid"],
            "seccomp": resolved["seccomp"],
        }
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *a: None)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
            signal.signal(sig, self._on_signal)
        status_r, status_w = os.pipe()
        fds = {"status": status_r, "wake": wake_r}
        if "bwrap" in policy.layers:
            try:
                self._start_bwrap(cfg, status_w, fds)
            except OSError as e:
                return self.report.fail("bwrap", f"cannot start bubblewrap ({e})")
        else:
            self._start_fork(cfg, status_w, status_r, wake_r, wake_w)
        os.close(status_w)
        return self._loop(fds)

    def _start_fork(self, cfg, status_w, status_r, wake_r, wake_w):
        cfg = dict(cfg, status_fd=status_w, in_bwrap=False, ppid=os.getpid())
        pid = os.fork()
        if pid == 0:
            try:
                signal.set_wakeup_fd(-1)
                for fd in (status_r, wake_r, wake_w):
                    os.close(fd)
            except BaseException:
                pass
            inner_stage(cfg)
            os._exit(EXIT_UNAVAILABLE)
        self.main_pid = pid
        self._set_target(pid)

    def _start_bwrap(self, cfg, status_w, fds):
        info_r, info_w = os.pipe()
        err_r, err_w = os.pipe()
        src = memfd_source()
        stderr_copy = os.dup(2)
        cfg = dict(cfg, status_fd=status_w, stderr_fd=stderr_copy, in_bwrap=True, ppid=1)
        base_python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        argv = bwrap_argv(self.policy, info_w, "user" in cfg["layers"], Host.here(self.policy))
        argv += ["--", base_python, "-I", "-S", f"/proc/self/fd/{src}", "--inner", json.dumps(cfg)]
        try:
            # bwrap itself is the sandbox's pid 1, whose /proc/1/environ the program can read: it
            # gets no environment of the grader's (the program's own comes from --setenv).
            proc = subprocess.Popen(
                argv,
                pass_fds=(info_w, status_w, src, stderr_copy),
                stderr=err_w,
                process_group=0,
                close_fds=True,
                env={"PATH": "/usr/bin:/bin"},
            )
        finally:
            for fd in (info_w, err_w, src, stderr_copy):
                os.close(fd)
        self.main_pid = proc.pid
        proc.returncode = 0  # the supervisor reaps it itself; keep Popen.__del__ quiet
        fds["info"] = info_r
        fds["err"] = err_r

    # -- main loop ------------------------------------------------------------------------------
    def _loop(self, fds: dict) -> int:
        policy = self.policy
        buffers = {k: b"" for k in fds}
        next_du = time.monotonic() + DU_EVERY
        next_count = next_memory = 0.0
        extra = 2 if "bwrap" in policy.layers else 0  # bwrap's monitor and its pid 1
        while self.exit_status is None:
            self._reap()
            if self.exit_status is not None:
                break
            if self.kill_now:
                self.kill_tree()
                self.exit_status = 128 + signal.SIGKILL
                break
            now = time.monotonic()
            if self.term_deadline is None and os.getppid() != self.parent:
                self._on_signal(signal.SIGTERM, None)  # orphaned: as if told to stop
            if self.term_deadline is not None and now > self.term_deadline:
                self.kill_tree()
                self.exit_status = 128 + signal.SIGTERM
                break
            if now >= next_count:
                next_count = now + TICK / 2
                count = len(self.descendants()) - extra
                if count > policy.max_processes:
                    self.limit = f"{count} processes > max_processes {policy.max_processes}; stopped"
                    self.kill_tree()
                    break
            if policy.memory_bytes and now >= next_memory:
                next_memory = now + MEMORY_EVERY
                used = limits.tree_memory(self.descendants(), policy.memory_bytes)
                if used > policy.memory_bytes:
                    self.limit = (
                        f"memory: {used // 2**20} MiB > memory_bytes {policy.memory_bytes // 2**20} MiB; stopped"
                    )
                    self.kill_tree()
                    break
            if now >= next_du and policy.write:
                t0 = time.monotonic()
                used = du(policy.write)
                next_du = time.monotonic() + max(DU_EVERY, 10 * (time.monotonic() - t0))
                if used > policy.scratch_bytes:
                    self.limit = (
                        f"the write directories hold {used} bytes > scratch_bytes {policy.scratch_bytes}; stopped"
                    )
                    self.kill_tree()
                    break
            readable = [fd for fd in fds.values() if fd is not None]
            try:
                ready, _, _ = select.select(readable, [], [], TICK)
            except InterruptedError:
                continue
            for name, fd in list(fds.items()):
                if fd is None or fd not in ready:
                    continue
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if name == "wake":
                    continue
                if not data:
                    os.close(fd)
                    fds[name] = None
                    data = b"\n" if name == "status" else b""
                    if name != "status":
                        self._take(name, buffers[name], final=True)
                        continue
                buffers[name] = self._take(name, buffers[name] + data)
        # The main process is gone (or the tree is being stopped): nothing may stay.
        for name, fd in fds.items():
            if fd is not None and name in ("status", "err", "info"):
                try:
                    os.set_blocking(fd, False)
                    buffers[name] = self._take(name, buffers[name] + os.read(fd, 65536))
                except OSError:
                    pass
        self.kill_tree()
        for name in ("status", "err"):
            if buffers.get(name):
                self._take(name, buffers[name] + b"\n", final=True)
        return self._result()

    def _take(self, name: str, data: bytes, final: bool = False) -> bytes:
        if name == "status":
            *lines, rest = data.split(b"\n")
            for line in lines:
                if line:
                    self._message(line.decode(errors="replace"))
            return rest
        if name == "info":
            try:
                self.info = json.loads(data.decode())
                self._find_target()
                return b""
            except ValueError:
                return data
        if name == "err":
            if self.started:
                os.write(2, data)  # bwrap's own late messages
                return b""
            self.bwrap_err += data
            return b""
        return b""

    def _message(self, line: str):
        kind, _, text = line.partition(" ")
        if kind == "S":
            self.started = True
            self.inner_pid = int(text)
            if self.bwrap_err.strip():
                os.write(2, self.bwrap_err)
                self.bwrap_err = b""
            self._find_target()
        else:
            self.messages.append(line)

    def _find_target(self):
        if self.target_fd is not None or "bwrap" not in self.policy.layers:
            return
        if not self.started or not self.info.get("child-pid"):
            return
        for _ in range(200):
            pid = ns_child(self.info["child-pid"], self.inner_pid)
            if pid:
                self._set_target(pid)
                return
            time.sleep(0.005)

    def _result(self) -> int:
        for line in self.messages:
            kind, _, text = line.partition(" ")
            if kind == "E":
                layer, _, reason = text.partition("\t")
                return self.report.fail(layer, reason)
        if self.limit:
            return self.report.fail("limit", self.limit, EXIT_LIMIT)
        if "bwrap" in self.policy.layers and not self.started:
            text = self.bwrap_err.decode(errors="replace")
            lines = [ln for ln in text.splitlines() if ln.strip()]
            reason = lines[-1] if lines else f"bubblewrap exited with status {self.exit_status}"
            return self.report.fail("bwrap", explain_bwrap(reason))
        for line in self.messages:
            kind, _, text = line.partition(" ")
            if kind == "X":
                code, _, reason = text.partition("\t")
                return self.report.fail("exec", reason, int(code))
        return self.exit_status if self.exit_status is not None else 128 + signal.SIGKILL


def supervise(policy: Policy, argv: list[str], report: Report) -> int:
    """Run `argv` confined by `policy`; its exit status (128+N for signal N), or why it never ran."""
    if not argv:
        return report.fail("policy", "no program to run")
    return Supervisor(policy, argv, report).run()
