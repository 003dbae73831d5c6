"""The confined kernel, through jupyter_client's own extension points.

- `ConfinedProvisioner` (entry point `attention-confined` of `jupyter_client.kernel_provisioners`)
  starts ipykernel under the confinement supervisor (`attention_course.confinement.confine`) with the student's policy,
  environment and folder, and stops it by a signal to the supervisor, which ends the kernel and
  everything below it: never by a request over the kernel's channel, which a student's code can
  wedge.
- `ConfinedKernelSpecManager` hands out the `attention-confined` kernelspec for one student's
  workspace, with the provisioner's settings in its `kernel_provisioner` stanza: nothing is
  written to the Jupyter path and no environment variable of the grader's process changes.
- `QuietKernelClient` starts no heartbeat channel: nbclient watches the kernel's process, and a
  heartbeat thread pinging a kernel that a student's code killed is what kept zmq contexts
  alive (their garbage collection then waits for ever in `zmq.Context.term`).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading

import zmq
from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager, NoSuchKernel
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Any, Dict, Unicode

from attention_course.confinement import confine

KERNEL_NAME = "attention-confined"


class ConfinedProvisioner(LocalProvisioner):
    """A local kernel, run by the confinement supervisor."""

    policy_path = Unicode(help="The confinement policy file of this kernel.").tag(config=True)
    cwd = Unicode(help="The kernel's working folder (the student's workspace).").tag(config=True)
    env = Dict(help="The kernel's whole environment.").tag(config=True)
    warm = Any(None, help="The student's WarmStarter (warm_kernels.py): fork the kernel from it.").tag(config=True)

    async def pre_launch(self, **kwargs):
        kwargs = await super().pre_launch(**kwargs)
        if self.warm is not None:
            kwargs["env"] = dict(self.env)
            kwargs["cwd"] = self.cwd
            return kwargs
        kwargs["cmd"] = [
            sys.executable,
            "-I",
            confine.SCRIPT,
            "run",
            "--policy",
            self.policy_path,
            "--",
            *kwargs["cmd"],
        ]
        kwargs["env"] = dict(self.env)
        kwargs["cwd"] = self.cwd
        return kwargs

    async def launch_kernel(self, cmd: list[str], **kwargs):
        if self.warm is None:
            return await super().launch_kernel(cmd, **kwargs)
        # the starter is the kernel's confined parent; `process` stands for the kernel
        self.process = await in_own_thread(self.warm.start, cmd, kwargs["env"], kwargs["cwd"])
        self.pid, self.pgid = self.process.pid, None
        self.cwd = kwargs["cwd"]
        return self.connection_info

    async def send_signal(self, signum: int) -> None:
        # To the supervisor only: it forwards SIGINT/SIGTERM/SIGHUP to the confined kernel.
        if self.process is not None and self.process.poll() is None:
            if self.warm is None:
                self.process.send_signal(signum)
            else:  # a request to the warm starter, which answers
                await in_own_thread(self.process.send_signal, signum)

    async def terminate(self, restart: bool = False) -> None:
        await self.send_signal(signal.SIGTERM)  # forwarded; the tree is killed after the grace time

    async def kill(self, restart: bool = False) -> None:
        await self.send_signal(signal.SIGUSR1)  # the supervisor (or warm starter) kills the tree at once
        for _ in range(int((confine.GRACE_SECONDS + 5) / 0.05)):
            if self.process is None or self.process.poll() is not None:
                return
            await asyncio.sleep(0.05)
        if self.process is not None and self.process.poll() is None:
            if self.warm is None:
                self.process.kill()
            else:
                await in_own_thread(self.process.kill)


async def in_own_thread(call, *args):
    """`call(*args)` in a thread of its own that ends with it, awaited without blocking the loop.

    Not `asyncio.to_thread`: that starts the loop's default executor, whose threads outlive the
    conversion in a process that grades in-process (formgrader) and is never shut down there.
    """
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def settle(result, error):
        if not done.cancelled():
            done.set_exception(error) if error is not None else done.set_result(result)

    def work():
        try:
            result, error = call(*args), None
        except BaseException as exc:  # handed to the awaiting coroutine
            result, error = None, exc
        loop.call_soon_threadsafe(settle, result, error)

    thread = threading.Thread(target=work, name="warm-request", daemon=True)
    thread.start()
    try:
        return await done
    finally:
        if done.done():
            thread.join()  # it has handed over its result (or error) and is ending


class ConfinedKernelSpecManager(KernelSpecManager):
    """Knows one kernel, `attention-confined`, set up for one student's workspace."""

    launch = Dict(help="The ConfinedProvisioner's settings (policy_path, cwd, env).")

    def find_kernel_specs(self) -> dict[str, str]:
        return {KERNEL_NAME: ""}

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        if kernel_name != KERNEL_NAME:
            raise NoSuchKernel(kernel_name)
        return KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name="Python 3 (confined for grading)",
            language="python",
            metadata={
                "debugger": False,
                "kernel_provisioner": {"provisioner_name": KERNEL_NAME, "config": dict(self.launch)},
            },
        )


MAX_MESSAGE = 16 * 2**20  # a bigger message from the kernel is dropped by zmq itself
# How long the end of a cell's output may take to arrive after the kernel's reply. nbgrader's 4 s is
# short on a machine busy with a whole class (another student's endless loop, two kernels and two
# sandboxes per core): an honest notebook lost its output there. Only a kernel whose output
# really stopped (a message over MAX_MESSAGE, a cell that goes on after its interrupt) waits it out.
IOPUB_WAIT = 30


class QuietKernelClient(AsyncKernelClient):
    """nbclient's kernel client without a heartbeat channel, whose sockets take no message over
    MAX_MESSAGE from the kernel (zmq drops it, and the peer, before it reaches nbgrader's memory)."""

    def _context_default(self):
        context = super()._context_default()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)
        return context

    def start_channels(self, shell=True, iopub=True, stdin=True, hb=False, control=True):
        super().start_channels(shell=shell, iopub=iopub, stdin=stdin, hb=False, control=control)


def close_everything(km, kc) -> None:
    """Stop a kernel client's channels and destroy every zmq context of the client and its
    manager, at once and without lingering: nothing is left for the garbage collector to close."""
    for owner in (kc, km):
        if owner is None:
            continue
        if owner is kc:
            try:
                kc.stop_channels()
            except Exception:
                pass
        context = owner._trait_values.get("context")  # reading `.context` would make one
        if context is not None and not context.closed:
            context.destroy(linger=0)
