"""The static policy for exercises that forbid the built-in attention: every way of reaching a
built-in without writing its name is refused, and right answers in every style pass."""

from __future__ import annotations

import pytest

from grading.manifest import load
from grading.policy import refusal, violations
from grading.reference import answer_source

COURSE = load()
FORBIDDING = [i for i in COURSE.exercises() if i.forbid_builtins]

TRICKS = {
    "getattr with a built name": "def f(q):\n    return getattr(F, 'scaled_dot_' + 'product_attention')(q, q, q)\n",
    "an alias of the built-in": "import torch.nn.functional as G\nattend = G.scaled_dot_product_attention\n",
    "getattr kept under another name": "g = getattr\ndef f(x):\n    return g(F, 'x')\n",
    "__import__": "def f():\n    return __import__('torch')\n",
    "eval": "def f(s):\n    return eval(s)\n",
    "importlib": "import importlib\n",
    "sys.modules": "import sys\ndef f():\n    return sys.modules['torch']\n",
    "ctypes": "import ctypes\n",
    "gc": "import gc\n",
    "a module's __dict__": "def f():\n    return F.__dict__['softmax']\n",
    "a private torch attribute": "def f():\n    return torch._C._nn\n",
    "torch.ops": "def f():\n    return torch.ops.aten\n",
    "patching a library function": "import numpy\nnumpy.savez = print\n",
    "patching torch.softmax": "torch.softmax = lambda *a, **k: None\n",
    "the course's helpers": "from helpers.demos import fused_attention\n",
    "getattr on a rebound self": "class M:\n    def f(self):\n        self = F\n        return getattr(self, 'x')\n",
    "a string naming the built-in": "NAME = 'scaled_dot_product_attention'\n",
    "vars()": "def f():\n    return vars(F)\n",
    "the multi-head built-in": "def f(d):\n    return nn.MultiheadAttention(d, 1)\n",
    "a class attribute holding a module": (
        "class M:\n    fn = F\n    def f(self):\n        return self.fn.__getattribute__('x')\n"
    ),
}


@pytest.mark.parametrize("name", TRICKS)
def test_every_way_around_the_ban_is_refused(name):
    assert violations([TRICKS[name]], COURSE.forbidden), name


@pytest.mark.parametrize("item", FORBIDDING, ids=lambda i: i.name)
def test_the_reference_and_every_alternative_pass(item):
    assert violations([answer_source(COURSE, item)], COURSE.forbidden) == []
    for source in item.alternatives:
        assert violations([source], COURSE.forbidden) == [], source


def test_own_layers_may_be_reached_with_getattr_and_setattr():
    source = (
        "class M:\n    def __init__(self, d):\n        super().__init__()\n"
        "        for name in ('W_q', 'W_k'):\n            setattr(self, name, nn.Linear(d, d))\n"
        "    def forward(self, x):\n        return getattr(self, 'W_q')(x) + self._split(x)\n"
    )
    assert violations([source], COURSE.forbidden) == []


def test_a_string_may_name_the_students_own_exercise():
    source = (
        "def demo(q, k, v):\n"
        "    return demos.attempt('scaled_dot_product_attention', scaled_dot_product_attention, q, k, v)\n"
    )
    names = tuple(i.name for i in COURSE.exercises())
    assert violations([source], COURSE.forbidden, names) == []
    assert violations(["NAME = 'scaled_dot_product_flash'\n"], COURSE.forbidden, names)
    assert violations(["from torch.nn.functional import scaled_dot_product_attention\n"], COURSE.forbidden, names)


def test_a_docstring_may_name_the_built_in():
    source = 'def f(q):\n    """Like F.scaled_dot_product_attention, by hand."""\n    return q\n'
    assert violations([source], COURSE.forbidden) == []


def test_the_refusal_is_one_sentence_naming_what_is_not_allowed():
    text = refusal("scaled_dot_product_attention", ["getattr() on anything but self"])
    assert "getattr()" in text and text.count(". ") == 0 and text.endswith(".")
