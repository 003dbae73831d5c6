"""The warm starter: one confined Python per student that has imported PyTorch, ipykernel and
matplotlib once, from which each notebook's kernel is forked (a fresh kernel spends about two
seconds of processor time importing them; a forked one about a quarter of a second).

It is run confined, as the student's kernels are (`python -c <this file> <modules>`, never
imported by the grader: only the standard library at the top), and speaks JSON lines: requests on
its standard input, answers and news on its standard output.

    {"start": {"argv": [...], "env": {...}, "cwd": "..."}}  ->  {"started": pid}
    {"signal": [pid, signum]}                              ->  {"signalled": pid}
    {"end": pid}                                           ->  {"ended": pid}
    (news)                                                     {"exited": pid, "status": code}

A kernel is the leader of a session of its own. `end` kills the kernel and everything left below
this process (it is a subreaper: what a kernel started comes here when its parent goes), so
nothing of one notebook outlives it into the next. At the end of its input it kills everything
below it and exits.
"""

import ctypes
import gc
import json
import os
import random
import select
import signal
import sys

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"  # ipykernel's default


def _children_of() -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        found.setdefault(int(fields[1]), []).append(int(name))
    return found


def below(pid: int) -> list[int]:
    """Every process below `pid`."""
    children, found, stack = _children_of(), [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def kill_below() -> None:
    """Stop, then kill, everything below this process (it is their reaper: none escapes)."""
    for _ in range(20):
        tree = below(os.getpid())
        if not tree:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in tree + below(os.getpid()):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        reap()


EXITED: dict[int, int] = {}


def reap() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        EXITED[pid] = os.waitstatus_to_exitcode(status)


def become_kernel(request: dict, closing: list[int]) -> None:
    """In the forked child: the kernel the request asks for (`python -m ipykernel_launcher ...`)."""
    os.setsid()
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # as a kernel started on its own is
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    for fd in closing:
        os.close(fd)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if "matplotlib" in sys.modules:
        # imported before this kernel's environment was known: the backend a kernel started on its
        # own would pick (its MPLBACKEND, else the inline one ipykernel asks for); none is loaded yet
        backend = os.environ.get("MPLBACKEND") or INLINE_BACKEND
        sys.modules["matplotlib"].rcParams["backend"] = backend
    random.seed()  # a fresh process's random state, not the starter's
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    argv = list(request["argv"])
    module = argv[argv.index("-m") + 1]
    sys.argv = [module, *argv[argv.index("-m") + 2 :]]
    sys.path[0] = request["cwd"]  # as `python -m` puts the working folder first
    import runpy

    runpy.run_module(module, run_name="__main__", alter_sys=True)


def main() -> None:
    for name in json.loads(sys.argv[1]) if len(sys.argv) > 1 else []:
        try:
            __import__(name)
        except Exception:  # a module that does not import here is imported by the kernel, or not
            pass
    # What is imported stays: the kernels' garbage collector leaves it alone (a full collection
    # would walk every object of PyTorch, ipykernel and matplotlib, in every kernel) and does not
    # write to the pages they share with this process.
    gc.freeze()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # not dumpable: a kernel of the same account can neither attach to this process nor write
    # its memory, so one notebook's code cannot shape the kernels of the notebooks after it
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    requests, answers = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # nothing an import prints gets into the answers
    os.close(null)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    kernels: set[int] = set()
    buffer = b""

    def say(message: dict) -> None:
        os.write(answers, (json.dumps(message) + "\n").encode())

    def news() -> None:
        reap()
        for pid in sorted(set(EXITED) & kernels):
            kernels.discard(pid)
            say({"exited": pid, "status": EXITED.pop(pid)})
        EXITED.clear()  # strays reaped here: nobody waits for them

    say({"ready": os.getpid()})
    while True:
        ready, _, _ = select.select([requests, wake_r], [], [])
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            news()
        if requests not in ready:
            continue
        chunk = os.read(requests, 65536)
        if not chunk:
            kill_below()
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            request = json.loads(line)
            if "start" in request:
                pid = os.fork()
                if pid == 0:  # the kernel: it ends as a Python program ends, never back in this loop
                    become_kernel(request["start"], [requests, answers, wake_r, wake_w])
                    sys.exit(0)
                kernels.add(pid)
                say({"started": pid})
            elif "signal" in request:
                pid, signum = request["signal"]
                if pid in kernels:
                    try:
                        os.killpg(pid, signum)
                    except OSError:
                        try:
                            os.kill(pid, signum)
                        except OSError:
                            pass
                say({"signalled": pid})
            elif "end" in request:
                kill_below()
                news()
                say({"ended": request["end"]})


if __name__ == "__main__":
    main()
