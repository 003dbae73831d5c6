"""Hostile, broken and messy submissions for the grader's attack suites.

Each student carries several attacks, faults or messes at once, one per answer cell (so one
grading run covers them all); `expected` says what each must get:
- attack: a wrong answer dressed up with a trick; its test cell must score 0;
- fault: the answer kills, stalls or bloats the process; its test cell scores 0 with the reason
  (a word of it in `reasons`) in the feedback, and every other cell keeps its marks;
- messy: a right answer in an untidy notebook; full marks.

Two families:
- TRICKS: tricks played inside the student's own kernel (patched comparisons, tensor subclasses,
  edited tests, the built-in under another name, ...). The grader never trusts the kernel, so
  they lose whatever confines it; they run once, with the mutation suite.
- `escapes(...)`: attempts to get out of the confinement (read the instructor's files and other
  students', import the grader, change course files, signal or trace the grader, read its
  memory, reach the network, outlive grading, exhaust the machine, forge the sandbox's report).
  They run under each confinement layer (tests/e2e/test_attacks.py). Kernel-side attempts print a
  line `ESCAPE <name>: <what happened>`; `ESCAPED` in it means the attempt worked.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from attention_course.model.manifest import Course
from classroom import submission, wrong_answer

# Tricks played in the kernel, put in front of a wrong answer.
PREAMBLES = {
    "patch_allclose": "torch.allclose = lambda *a, **k: True\n"
    "torch.isclose = lambda a, b, **k: torch.ones_like(a, dtype=torch.bool)\n",
    "patch_equal": "torch.equal = lambda *a: True\n",
    "patch_assert_close": "import torch.testing\ntorch.testing.assert_close = lambda *a, **k: None\n",
    "patch_numpy": "import numpy\nnumpy.allclose = lambda *a, **k: True\n"
    "numpy.testing.assert_allclose = lambda *a, **k: None\n",
    "patch_course_helpers": "import helpers.checks\nhelpers.checks.check = lambda *a, **k: None\n"
    "helpers.checks.judge = lambda *a, **k: ''\n",
    "torch_function_mode": "from torch.overrides import TorchFunctionMode\n"
    "class Yes(TorchFunctionMode):\n"
    "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
    "        if func in (torch.allclose, torch.equal):\n"
    "            return True\n"
    "        return func(*args, **(kwargs or {}))\n"
    "Yes().__enter__()\n",
    "set_custom_exc": "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\n",
    "replace_showtraceback": "ip = get_ipython()\nip.showtraceback = lambda *a, **k: None\n"
    "ip._showtraceback = lambda *a, **k: None\n",
    "ast_try_except": "import ast\n"
    "class Swallow(ast.NodeTransformer):\n"
    "    def visit_Module(self, node):\n"
    "        handler = ast.ExceptHandler(type=ast.Name('BaseException', ast.Load()), name=None,"
    " body=[ast.Pass()])\n"
    "        node.body = [ast.Try(body=node.body or [ast.Pass()], handlers=[handler], orelse=[],"
    " finalbody=[])]\n"
    "        return ast.fix_missing_locations(node)\n"
    "get_ipython().ast_transformers.append(Swallow())\n",
    "fake_number_result": "ip = get_ipython()\n"
    "ip.events.register('post_run_cell', lambda *a: ip.displayhook(5.0))\n"
    "ip.set_custom_exc((BaseException,), lambda *a, **k: None)\n",
}

TENSOR_SUBCLASS = (
    "class Agreeable(torch.Tensor):\n"
    "    @classmethod\n"
    "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
    "        if func in (torch.allclose, torch.equal, torch.Tensor.__eq__):\n"
    "            return True\n"
    "        return super().__torch_function__(func, types, args, kwargs or {})\n"
    "def raw_scores(q, k):\n"
    "    return torch.zeros(q.shape[:-1] + k.shape[-2:-1]).as_subclass(Agreeable)\n"
)
SDPA_SOFTMAX = (
    "    w = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5"
    " + (0 if mask is None else (~mask) * -1e9), -1)\n"
)
BUILTIN_ALIAS = (
    "import torch.nn.functional as G\nattend = G.scaled_dot_product_attention\n"
    "def scaled_dot_product_attention(q, k, v, mask=None):\n"
    + SDPA_SOFTMAX
    + "    return attend(q, k, v, attn_mask=mask), w\n"
)
BUILTIN_GETATTR = (
    "def scaled_dot_product_attention(q, k, v, mask=None):\n"
    "    fn = getattr(__import__('torch').nn.functional, 'scaled_dot_' + 'product_attention')\n"
    + SDPA_SOFTMAX
    + "    return fn(q, k, v, attn_mask=mask), w\n"
)
# Silence any recorder the sandbox may run, hide the operator from the report, use the built-in.
SILENCED_RECORDER = (
    "def scaled_dot_product_attention(q, k, v, mask=None):\n"
    "    import gc, numpy\n"
    "    for obj in gc.get_objects():\n"
    "        if type(obj).__name__ == 'OpRecorder':\n"
    "            obj.seen = type('Blind', (set,), {'add': lambda self, x: None})()\n"
    "    real = numpy.savez\n"
    "    numpy.savez = lambda *a, **k: real(*a, **{n: v for n, v in k.items() if 'scaled' not in str(v)})\n"
    "    fn = vars(__import__('torch').nn.functional)['scaled_dot_' + 'product_attention']\n"
    + SDPA_SOFTMAX
    + "    return fn(q, k, v, attn_mask=mask), w\n"
)
READ_CASE_FILE = (
    "from helpers.casefile import load_cases\n"
    "known = [c for c in load_cases() if c.exercise == 'raw_scores']\n"
    "def raw_scores(q, k):\n"
    "    for c in known:\n"
    "        if c.tensors['q'].shape == q.shape and torch.equal(c.tensors['q'], q):\n"
    "            return c.expected[0].to(q.dtype)\n"
    "    return torch.zeros(q.shape[:-1] + k.shape[-2:-1])\n"
)
# The sandbox hands results back as framed messages on a pipe: forge "done" before any result.
FORGED_REPORT = (
    "def concat_heads(x):\n"
    "    import os, json, struct\n"
    "    head = json.dumps({'done': True, 'arrays': []}).encode()\n"
    "    message = struct.pack('<Q', len(head)) + head\n"
    "    for fd in range(3, 64):\n"
    "        try:\n"
    "            os.write(fd, struct.pack('<Q', len(message)) + message)\n"
    "        except OSError:\n"
    "            pass\n"
    "    return x.reshape(x.shape[0], x.shape[2], -1)\n"
)


def _cells(notebook: dict, test: bool):
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if bool(meta.get("grade") and not meta.get("solution")) == test and (not test or meta):
            yield cell


def _edit_test_cells(notebook):
    for cell in list(_cells(notebook, test=True)):
        cell["source"] = "print('all good')"
        cell["metadata"]["nbgrader"]["points"] = 100


def _strip_test_metadata(notebook):
    for cell in list(_cells(notebook, test=True)):
        cell["metadata"] = {}
        cell["source"] = "pass"


def _delete_test_cells(notebook):
    tests = [id(c) for c in _cells(notebook, test=True)]
    notebook["cells"] = [c for c in notebook["cells"] if id(c) not in tests]


def _duplicate_test_cell(notebook):
    notebook["cells"].append(copy.deepcopy(next(_cells(notebook, test=True))))


def _odd_kernelspec(notebook):
    notebook["metadata"]["kernelspec"] = {"name": "my-own-python", "display_name": "Mine", "language": "python"}


def _raising_cells(notebook):
    code = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    notebook["cells"].insert(3, {**code, "source": "1 / 0"})
    notebook["cells"].append({**code, "source": "raise RuntimeError('leftover experiment')"})


@dataclass
class Student:
    """A submission and what each of its attacks, faults or messes must get."""

    name: str
    answers: dict[str, str]
    expected: dict[str, tuple[str, str]]  # item -> (kind, name of the trick)
    edits: dict[str, Callable] = field(default_factory=dict)  # notebook -> change
    reasons: dict[str, str] = field(default_factory=dict)  # item -> a word of the reason

    def build(self, course: Course) -> dict:
        notebooks = submission(course, self.answers, notebooks=course.graded_notebooks())
        for notebook, change in self.edits.items():
            change(notebooks[notebook])
        return notebooks


def _wrong(course: Course, item: str) -> str:
    it = course.item(item)
    return wrong_answer(course, item, it.wrong_options[0] if it.is_question else next(iter(it.mistakes)))


def _attackers(course: Course, name: str, plan: dict[str, str], special: dict[str, str], edits=None) -> Student:
    answers = {
        target: PREAMBLES[trick] + _wrong(course, target) if trick in PREAMBLES else special[trick]
        for target, trick in plan.items()
    }
    return Student(name, answers, {t: ("attack", trick) for t, trick in plan.items()}, edits or {})


def tricks(course: Course) -> list[Student]:
    """Tricks inside the kernel, and messy right answers: graded once, with the mutants."""
    special = {
        "tensor_subclass": TENSOR_SUBCLASS,
        "builtin_alias": BUILTIN_ALIAS,
        "builtin_getattr": BUILTIN_GETATTR,
        "read_the_case_file": READ_CASE_FILE,
        "edited_test_cells": _wrong(course, "split_heads"),
        "stripped_test_metadata": _wrong(course, "concat_heads"),
        "silenced_recorder": SILENCED_RECORDER,
        "forged_report": FORGED_REPORT,
    }
    return [
        _attackers(
            course,
            "tricks_a",
            {
                "raw_scores": "patch_allclose",
                "scaled_scores": "patch_equal",
                "quick_check": "patch_assert_close",
                "scaled_dot_product_attention": "builtin_alias",
                "split_heads": "patch_numpy",
                "concat_heads": "patch_course_helpers",
                "MultiHeadAttention": "torch_function_mode",
                "to_torch_mha": "set_custom_exc",
            },
            special,
        ),
        _attackers(
            course,
            "tricks_b",
            {
                "raw_scores": "tensor_subclass",
                "scaled_scores": "replace_showtraceback",
                "quick_check": "ast_try_except",
                "scaled_dot_product_attention": "builtin_getattr",
                "split_heads": "edited_test_cells",
                "concat_heads": "stripped_test_metadata",
                "MultiHeadAttention": "fake_number_result",
            },
            special,
            edits={"03_split_heads": _edit_test_cells, "04_concat_heads": _strip_test_metadata},
        ),
        _attackers(
            course,
            "tricks_c",
            {
                "raw_scores": "read_the_case_file",
                "scaled_dot_product_attention": "silenced_recorder",
                "concat_heads": "forged_report",
            },
            special,
        ),
        Student(
            "messy",
            {
                "raw_scores": "def raw_scores(q, k):\n    return q @ k.transpose(-2, -1)\nimport sys\nsys.exit()\n",
                "scaled_scores": "import sys, warnings\ndef scaled_scores(q, k):\n"
                "    print('debug', q.shape, file=sys.stderr)\n    warnings.warn('noisy but right')\n"
                "    return q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5\n",
            },
            expected={
                "raw_scores": ("messy", "sys_exit_after_definition"),
                "scaled_scores": ("messy", "prints_and_warnings"),
                "scaled_dot_product_attention": ("messy", "changed_kernelspec"),
                "split_heads": ("messy", "deleted_test_cells"),
                "concat_heads": ("messy", "duplicated_test_cell"),
                "quick_check": ("messy", "cells_that_raise"),
            },
            edits={
                "01_scaling_problem": _raising_cells,
                "02_scaled_dot_product_attention": _odd_kernelspec,
                "03_split_heads": _delete_test_cells,
                "04_concat_heads": _duplicate_test_cell,
            },
        ),
    ]


# ----------------------------------------------------------------------------------------- escapes

ESCAPE_HELPERS = r"""
import os, sys, glob, socket, signal, subprocess, time
INBOX = os.path.dirname(os.getcwd()) + ".sandbox-in"  # what the grader hands the sandbox
def escape(name, attempt):
    try:
        result = attempt()
        print(f"ESCAPE {name}: ESCAPED {str(result)[:200]}")
    except BaseException as exc:
        print(f"ESCAPE {name}: stopped ({type(exc).__name__})")
"""


def escapes(course: Course, paths: dict[str, str]) -> list[Student]:
    """Students who try to get out, in kernel cells and in the graded functions themselves.
    `paths`: course, canary files, port, token (see test_attacks.py)."""
    p = dict(paths)
    reads = (
        ESCAPE_HELPERS
        + f"""
escape("read the canary in source/", lambda: open({p["source_canary"]!r}).read())
escape("read another student's notebook", lambda: open({p["other_canary"]!r}).read())
escape("read the instructor's notebook", lambda: open({p["instructor"]!r}).read()[:100])
escape("list the course", lambda: os.listdir({p["course"]!r}))
escape("read the gradebook", lambda: open({p["course"]!r} + "/gradebook.db", "rb").read(16))
escape("import the grader", lambda: __import__("attention_course.grading.trusted").__file__)
escape("read the sandbox's test inputs", lambda: [open(f"{{INBOX}}/{{f}}", "rb").read(8) for f in os.listdir(INBOX)])
escape("another kernel's connection file", lambda: [f for f in glob.glob("/tmp/**/kernel-*.json", recursive=True)
                                                    + glob.glob({p["course"]!r} + "/build/**/kernel-*.json", recursive=True)
                                                    if not f.startswith(os.environ.get("JUPYTER_RUNTIME_DIR", "-"))] or 1 / 0)
def _memory():
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            for what in ("environ", "cmdline"):
                try:
                    data = open(f"/proc/{{pid}}/{{what}}", "rb").read()
                    if b"ATTENTION_TEST_SECRET=" in data:
                        return data.split(b"ATTENTION_TEST_SECRET=")[1][:40]
                except OSError:
                    pass
            try:
                with open(f"/proc/{{pid}}/mem", "rb") as mem:
                    mem.seek(0x400000)
                    return mem.read(8)
            except OSError:
                pass
    raise PermissionError("nothing readable")
escape("read the grader's memory and environment", _memory)
escape("connect to the test's listener", lambda: socket.create_connection(("127.0.0.1", {p["port"]}), timeout=3).send(b"hello"))
escape("send UDP", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", {p["port"]})))
"""
    )
    writes = (
        ESCAPE_HELPERS
        + f"""
escape("write a file at the course root", lambda: open({p["course"]!r} + "/PWNED.txt", "w").write("x"))
escape("append to the instructor's notebook", lambda: open({p["instructor"]!r}, "a").write("x"))
escape("delete another student's submission", lambda: os.remove({p["other_canary"]!r}))
escape("corrupt the gradebook", lambda: open({p["course"]!r} + "/gradebook.db", "r+b").write(b"x"))
escape("write outside the scratch folder", lambda: open("/tmp/escaped-" + {p["marker"]!r}, "w").write("x"))
escape("rewrite the sandbox's request", lambda: open(INBOX + "/request.json", "w").write("{{}}"))
escape("replace a helper the sandbox imports", lambda: open(INBOX + "/helpers/notebook_code.py", "a").write("1/0"))
try:   # processes meant to outlive grading (the test looks for the token in every command line)
    subprocess.Popen(["setsid", sys.executable, "-c", "import time; time.sleep(90)  # {p["marker"]}"])
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(90)  # {p["marker"]}"])
        os._exit(0)
    print("started processes meant to outlive grading")
except BaseException as exc:
    print("could not start a process:", type(exc).__name__)
escape("signal the grader", lambda: [os.kill({p["grader_pid"]}, 0), os.kill({p["grader_pid"]}, signal.SIGCONT)])
import ctypes
escape("trace the parent", lambda: ctypes.CDLL(None, use_errno=True).ptrace(16, os.getppid(), 0, 0) == 0 or 1 / 0)
"""
    )
    bomb = (
        ESCAPE_HELPERS
        + """
def _bomb():
    children = 0
    for _ in range(400):
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children += 1
    return children
escape("fork many processes", _bomb)
escape("write a huge file", lambda: open("huge.bin", "wb").write(b"0" * (600 * 2 ** 20)))
"""
    )
    inside_function = (  # runs in the sandbox: kill the process above it, then answer wrongly
        "def split_heads(x, num_heads):\n    import os, signal\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n    return x\n"
    )
    reader_from_disk = (
        "def concat_heads(x):\n    import json\n"
        f"    nb = json.load(open({p['instructor_04']!r}))\n"
        "    src = [''.join(c['source']) for c in nb['cells'] if c.get('metadata', {}).get('nbgrader', {}).get('solution')]\n"
        "    ns = {'torch': __import__('torch')}\n    exec(src[0], ns)\n    return ns['concat_heads'](x)\n"
    )
    return [
        Student(
            "escaper",
            {
                "raw_scores": reads + _wrong(course, "raw_scores"),
                "scaled_scores": writes + _wrong(course, "scaled_scores"),
                "split_heads": inside_function,
                "concat_heads": reader_from_disk,
                "to_torch_mha": bomb + _wrong(course, "to_torch_mha"),
            },
            {
                "raw_scores": ("attack", "reads"),
                "scaled_scores": ("attack", "writes"),
                "split_heads": ("attack", "kill_the_parent"),
                "concat_heads": ("attack", "solution_from_disk"),
                "to_torch_mha": ("attack", "bomb"),
            },
        ),
        Student(
            "faulty",
            {
                "scaled_scores": "def scaled_scores(q, k):\n    import os\n    os._exit(3)\n",
                "scaled_dot_product_attention": "def scaled_dot_product_attention(q, k, v, mask=None):\n"
                "    hog = torch.ones(1024 ** 3)  # 4 GiB: over the 2 GiB cap\n    return hog, hog\n",
                "split_heads": "def split_heads(x, num_heads):\n    while True:\n        pass\n",
                "concat_heads": "def concat_heads(x):\n    import ctypes\n    return ctypes.string_at(0)\n",
                "to_torch_mha": "def to_torch_mha(mha):\n    import time\n    time.sleep(10 ** 6)\n",
            },
            expected={
                "scaled_scores": ("fault", "os_exit"),
                "scaled_dot_product_attention": ("fault", "memory_hog"),
                "split_heads": ("fault", "endless_loop"),
                "concat_heads": ("fault", "segfault"),
                "to_torch_mha": ("fault", "long_sleep"),
            },
            reasons={
                "scaled_scores": "exit",
                "scaled_dot_product_attention": "memory",
                "split_heads": "longer than",
                "concat_heads": "died",
                "to_torch_mha": "longer than",
            },
        ),
    ]
