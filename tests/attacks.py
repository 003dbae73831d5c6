"""Hostile, broken and messy submissions for the grader's attack suite.

Each student carries several attacks, faults or messes at once, one per answer cell (so one
grading run covers them all); `expected` says what each must get:
- attack: a wrong answer dressed up with a trick inside the kernel; its test cell must score 0;
- fault: the answer kills, stalls or bloats the process; its test cell scores 0 with the reason
  (a word of it in `reason`) in the feedback, and every other cell keeps its marks;
- messy: a right answer in an untidy notebook; full marks.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable

from grading.classroom import answer_cells, submission, wrong_answer
from grading.mistakes import EDITS
from grading.trusted import QUICK_CHECK

# Tricks played in the kernel, put in front of a wrong answer.
PREAMBLES = {
    "patch_allclose": "torch.allclose = lambda *a, **k: True\n"
                      "torch.isclose = lambda a, b, **k: torch.ones_like(a, dtype=torch.bool)\n",
    "patch_equal": "torch.equal = lambda *a: True\n",
    "patch_assert_close": "import torch.testing\ntorch.testing.assert_close = lambda *a, **k: None\n",
    "patch_numpy": "import numpy\nnumpy.allclose = lambda *a, **k: True\n"
                   "numpy.testing.assert_allclose = lambda *a, **k: None\n",
    "patch_course_helpers": "import helpers.checks\nhelpers.checks.check_exercise = lambda *a, **k: None\n"
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
    "    return torch.zeros(q.shape[:-1] + k.shape[-2:-1]).as_subclass(Agreeable)\n")
SDPA_SOFTMAX = "    w = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5 + (0 if mask is None else (~mask) * -1e9), -1)\n"
BUILTIN_ALIAS = ("import torch.nn.functional as G\nattend = G.scaled_dot_product_attention\n"
                 "def scaled_dot_product_attention(q, k, v, mask=None):\n" + SDPA_SOFTMAX +
                 "    return attend(q, k, v, attn_mask=mask), w\n")
BUILTIN_GETATTR = ("def scaled_dot_product_attention(q, k, v, mask=None):\n"
                   "    fn = getattr(__import__('torch').nn.functional, 'scaled_dot_' + 'product_attention')\n"
                   + SDPA_SOFTMAX + "    return fn(q, k, v, attn_mask=mask), w\n")
READ_CASE_FILE = ("from helpers.casefile import load_cases\n"
                  "known = [c for c in load_cases() if c.exercise == 'raw_scores']\n"
                  "def raw_scores(q, k):\n"
                  "    for c in known:\n"
                  "        if c.tensors['q'].shape == q.shape and torch.equal(c.tensors['q'], q):\n"
                  "            return c.expected[0].to(q.dtype)\n"
                  "    return torch.zeros(q.shape[:-1] + k.shape[-2:-1])\n")


def _wrong(target: str) -> str:
    return wrong_answer(target, "A" if target == QUICK_CHECK else next(iter(EDITS[target])))


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
    expected: dict[str, tuple[str, str]]              # target -> (kind, name of the trick)
    edits: dict[str, Callable] = field(default_factory=dict)   # notebook -> change
    reasons: dict[str, str] = field(default_factory=dict)      # target -> word of the reason

    def build(self) -> dict:
        notebooks = submission(self.answers, notebooks=sorted({nb for nb, _ in answer_cells().values()}))
        for notebook, change in self.edits.items():
            change(notebooks[notebook])
        return notebooks


def _attackers(name: str, plan: dict[str, str], edits=None) -> Student:
    answers = {}
    for target, trick in plan.items():
        answers[target] = PREAMBLES[trick] + _wrong(target) if trick in PREAMBLES else SPECIAL[trick]
    return Student(name, answers, {t: ("attack", trick) for t, trick in plan.items()}, edits or {})


SPECIAL = {"tensor_subclass": TENSOR_SUBCLASS, "builtin_alias": BUILTIN_ALIAS, "builtin_getattr": BUILTIN_GETATTR,
           "read_the_case_file": READ_CASE_FILE, "edited_test_cells": _wrong("split_heads"),
           "stripped_test_metadata": _wrong("concat_heads")}

STUDENTS = [
    _attackers("attackers_a", {"raw_scores": "patch_allclose", "scaled_scores": "patch_equal",
                               QUICK_CHECK: "patch_assert_close", "scaled_dot_product_attention": "builtin_alias",
                               "split_heads": "patch_numpy", "concat_heads": "patch_course_helpers",
                               "MultiHeadAttention": "torch_function_mode", "to_torch_mha": "set_custom_exc"}),
    _attackers("attackers_b", {"raw_scores": "tensor_subclass", "scaled_scores": "replace_showtraceback",
                               QUICK_CHECK: "ast_try_except", "scaled_dot_product_attention": "builtin_getattr",
                               "split_heads": "edited_test_cells", "concat_heads": "stripped_test_metadata",
                               "MultiHeadAttention": "fake_number_result"},
               edits={"03_split_heads": _edit_test_cells, "04_concat_heads": _strip_test_metadata}),
    _attackers("attackers_c", {"raw_scores": "read_the_case_file"}),
    Student("faulty", {
        "scaled_scores": "def scaled_scores(q, k):\n    import os\n    os._exit(3)\n",
        "scaled_dot_product_attention": "def scaled_dot_product_attention(q, k, v, mask=None):\n"
                                        "    hog = torch.ones(3 * 1024 ** 3)\n    return hog, hog\n",
        "split_heads": "def split_heads(x, num_heads):\n    while True:\n        pass\n",
        "concat_heads": "def concat_heads(x):\n    import ctypes\n    return ctypes.string_at(0)\n",
        "to_torch_mha": "def to_torch_mha(mha):\n    import time\n    time.sleep(10 ** 6)\n"},
        expected={"scaled_scores": ("fault", "os_exit"), "scaled_dot_product_attention": ("fault", "memory_hog"),
                  "split_heads": ("fault", "endless_loop"), "concat_heads": ("fault", "segfault"),
                  "to_torch_mha": ("fault", "long_sleep")},
        reasons={"scaled_scores": "exit", "scaled_dot_product_attention": "memory", "split_heads": "longer than",
                 "concat_heads": "died", "to_torch_mha": "longer than"}),
    Student("messy", {
        "raw_scores": "def raw_scores(q, k):\n    return q @ k.transpose(-2, -1)\nimport sys\nsys.exit()\n",
        "scaled_scores": "import sys, warnings\ndef scaled_scores(q, k):\n"
                         "    print('debug', q.shape, file=sys.stderr)\n    warnings.warn('noisy but right')\n"
                         "    return q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5\n"},
        expected={"raw_scores": ("messy", "sys_exit_after_definition"), "scaled_scores": ("messy", "prints_and_warnings"),
                  "scaled_dot_product_attention": ("messy", "changed_kernelspec"),
                  "split_heads": ("messy", "deleted_test_cells"), "concat_heads": ("messy", "duplicated_test_cell"),
                  QUICK_CHECK: ("messy", "cells_that_raise")},
        edits={"01_scaling_problem": _raising_cells, "02_scaled_dot_product_attention": _odd_kernelspec,
               "03_split_heads": _delete_test_cells, "04_concat_heads": _duplicate_test_cell}),
]
