"""The static policy for exercises that forbid the built-in attention: every way of reaching a
built-in without writing its name is refused, right answers in every style pass, only what the
exercise needs is read, and the visible check refuses exactly what the grader refuses."""

from __future__ import annotations

import json

import pytest

from attention_course.grading.trusted import statements_of
from attention_course.model.manifest import load
from attention_course.model.reference import answer_source, define
from classroom import answer_cells, submission
from helpers import course as student_course
from helpers.checks import forbidden_message
from helpers.policy import check_exercise, refusal, violations
from helpers.statements import needed_statements

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
    "getattr on a plain function's first parameter": "def f(m):\n    return getattr(m, 'x')\n",
    "getattr on a lambda's parameter named self": (
        "class M:\n    def f(self):\n        return (lambda self: getattr(self, 'x'))(F)\n"
    ),
    "getattr on self in a default": "class M:\n    def f(self, g=getattr(self, 'x')):\n        return g\n",
    "getattr on a static method's first parameter": (
        "class M:\n    @staticmethod\n    def f(self):\n        return getattr(self, 'x')\n"
    ),
    "self rebound by an import": "class M:\n    def f(self):\n        import torch.nn.functional as self\n",
    "self rebound by a loop": "class M:\n    def f(self):\n        for self in [F]:\n            pass\n",
    "a frame's globals": "import sys\ndef f():\n    return sys.exc_info()[2].tb_frame.f_globals\n",
    "tracing": "import sys\ndef f():\n    sys.settrace(print)\n",
    "sys.modules under another name": "import sys as s\ndef f():\n    return s.modules\n",
    "an attribute lookup by name": "import typing\ndef f():\n    return typing.operator.attrgetter('x')(F)\n",
    "a banned call as an attribute": "import numpy\ndef f(s):\n    return numpy.eval(s)\n",
    "a string naming a lookup": "def f(d):\n    return d['getattr']\n",
    "code from a string in IPython": "import IPython.display\ndef f():\n    return get_ipython().run_cell('x')\n",
    "a private name from IPython": "from IPython.display import _safe_get_formatter_method\n",
    "os": "import os\n",
    "sys.path": "import sys\ndef f():\n    sys.path.insert(0, '.')\n",
    "path from sys": "from sys import path\n",
    "sys through torch": "def f():\n    return torch.sys.modules\n",
    "os through numpy": "def f():\n    return numpy.os.popen('python')\n",
    "an annotation evaluated": "import typing\ndef f(g):\n    return typing.get_type_hints(g)\n",
}


@pytest.mark.parametrize("name", TRICKS)
def test_every_way_around_the_ban_is_refused(name):
    assert violations([TRICKS[name]], COURSE.forbidden), name


def _cells(text: str) -> list[str]:
    before, answer, after = answer_cells(text, "")
    return [*before, answer, *after]


@pytest.mark.parametrize("item", FORBIDDING, ids=lambda i: i.name)
def test_the_reference_and_every_alternative_pass(item):
    assert violations([answer_source(COURSE, item)], COURSE.forbidden) == []
    for source in item.alternatives:
        assert check_exercise(_cells(source), item.name, COURSE.forbidden) == [], source


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
    assert text.startswith("`scaled_dot_product_attention` may not rely on getattr() on anything but self: ")
    assert text.count(". ") == 0 and text.endswith(".") and "\n" not in text


def test_aliases_imports_and_getattr_are_seen_but_not_docstrings():
    source = (
        "import torch.nn.functional as G\nfrom torch.nn import MultiheadAttention as M\n"
        'def f(q):\n    """Not F.scaled_dot_product_attention."""\n'
        "    g = getattr(G, 'scaled_' + 'dot_product_attention')\n"
        "    return G.scaled_dot_product_attention(q, q, q)\n"
    )
    found = violations([source], COURSE.forbidden)
    assert "the built-in G.scaled_dot_product_attention" in found and "the built-in MultiheadAttention" in found
    assert "getattr() on anything but self" in found


# ----------------------------------------------------------------------------- right answers

SDPA = "scaled_dot_product_attention"
REASSIGNED = (
    "def scaled_dot_product_attention(q, k, v, mask=None):\n"
    "    q = q / q.size(-1) ** 0.5\n"
    "    scores = q @ k.transpose(-2, -1)\n"
    "    if mask is not None:\n"
    "        scores = scores.masked_fill(~mask, float('-inf'))\n"
    "    weights = torch.softmax(scores, dim=-1)\n"
    "    return weights @ v, weights\n"
)


def test_a_parameter_may_be_reassigned():
    assert violations([REASSIGNED], COURSE.forbidden) == []


@pytest.mark.parametrize(
    "imports", ["import sys", "import time", "from IPython.display import display", "from IPython import display"]
)
def test_an_answer_may_import_sys_time_and_ipython_display(imports):
    assert violations([imports + "\n" + REASSIGNED], COURSE.forbidden) == []


def test_an_answer_may_print_to_stderr_stop_early_and_time_itself():
    source = (
        "import sys, time\n"
        "def scaled_dot_product_attention(q, k, v, mask=None):\n"
        "    start = time.perf_counter()\n"
        "    if q.numel() == 0:\n        sys.exit('empty')\n"
        "    print('took', time.perf_counter() - start, file=sys.stderr)\n"
        "    return q, q\n"
    )
    assert violations([source], COURSE.forbidden) == []


def test_a_method_may_reach_its_own_layers_through_self_in_nested_code():
    source = (
        "class M(nn.Module):\n    def forward(self, x):\n"
        "        helper = lambda y: getattr(self, 'W_q')(y)\n"
        "        return helper(x) + self._split(x) + super().forward(x)\n"
    )
    assert violations([source], COURSE.forbidden) == []


# ----------------------------------------------------------------------------- only what the exercise needs

SCRATCH = ["import time, os", "start = time.time()", "x = os.getcwd()", "def timing():\n    return getattr(F, 'x')\n"]


def test_only_the_statements_the_exercise_needs_are_read():
    helper = "def scores_of(q, k):\n    return q @ k.mT\n"
    answer = (
        "import time\n"
        "def scaled_dot_product_attention(q, k, v, mask=None):\n    t = time.time()\n    return scores_of(q, k), q\n"
    )
    statements = ["import math", "from helpers import demos", helper, answer, *SCRATCH]
    needed = needed_statements(statements, [SDPA])
    assert [s.split("(")[0] for s in needed] == ["def scores_of", "def scaled_dot_product_attention", "import time"]
    assert check_exercise(statements, SDPA, COURSE.forbidden) == []
    assert violations(statements, COURSE.forbidden)  # the scratch cell and the demo import, were they read


def test_what_the_exercise_uses_is_read_however_far_away():
    statements = [
        "import torch.nn.functional as G",
        "attend = G.scaled_dot_product_attention",
        "def helper(q):\n    return attend(q, q, q)\n",
        "def scaled_dot_product_attention(q, k, v, mask=None):\n    return helper(q), q\n",
    ]
    assert "the built-in G.scaled_dot_product_attention" in check_exercise(statements, SDPA, COURSE.forbidden)


def test_the_last_definition_counts_with_what_it_reads_when_it_is_defined():
    statements = [
        "def scaled_dot_product_attention(q, k, v, mask=None):\n    return getattr(F, 'x')(q), q\n",
        "wrap = getattr",
        REASSIGNED,
        "scaled_dot_product_attention = wrap(scaled_dot_product_attention, '__call__')",
    ]
    assert "getattr() on anything but self" in check_exercise(statements, SDPA, COURSE.forbidden)
    assert check_exercise(statements[:3], SDPA, COURSE.forbidden) == []  # the right one, defined last


def test_a_split_import_keeps_what_is_needed_only():
    statements = [
        "import os, time",
        "def scaled_dot_product_attention(q, k, v, mask=None):\n    return q, time.time()\n",
    ]
    assert needed_statements(statements, [SDPA])[0] == "import time"


# ----------------------------------------------------------------------------- the grader and the check agree


@pytest.mark.parametrize("item", FORBIDDING, ids=lambda i: i.name)
def test_the_grader_reads_right_answers_with_helper_and_scratch_cells_as_right(tmp_path, item):
    """Every alternative, in a submitted notebook with its helper and scratch cells: the grader's
    policy passes, and the sandbox gets the helper and the answer but not the scratch cell."""
    names = tuple(i.name for i in COURSE.exercises())
    for n, text in enumerate(item.alternatives):
        path = tmp_path / f"{n}.ipynb"
        path.write_text(json.dumps(submission(COURSE, {item.name: text})[item.notebook]))
        run, every = statements_of(COURSE, item.notebook, path, True)
        assert check_exercise(every, item.name, COURSE.forbidden, names) == [], text
        assert "import os" not in run and not any("getcwd" in s for s in run), run
    before, _, after = answer_cells(item.alternatives[-1], item.variable)
    assert before and after, "the last alternative has a helper cell before it and a scratch cell after it"


@pytest.fixture
def installed():
    with student_course.viewing(COURSE.student_view()):
        yield


WRONG_WAYS = [
    "def scaled_dot_product_attention(q, k, v, mask=None):\n"
    "    fn = getattr(torch.nn.functional, 'scaled_dot_' + 'product_attention')\n"
    "    return fn(q, k, v, attn_mask=mask), q\n",
    "import torch.nn.functional as G\nattend = G.scaled_dot_product_attention\n"
    "def scaled_dot_product_attention(q, k, v, mask=None):\n    return attend(q, k, v, attn_mask=mask), q\n",
    "def scaled_dot_product_attention(q, k, v, mask=None):\n"
    "    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask), q\n",
]


@pytest.mark.parametrize("source", WRONG_WAYS, ids=["getattr", "alias", "plain"])
def test_the_visible_check_refuses_what_the_grader_refuses_with_the_same_sentence(installed, source):
    """Outside a kernel (no history) the check rebuilds the statements from the objects: an alias
    is then read as what it holds, `torch._C._nn.scaled_dot_product_attention`."""
    fn = define(COURSE, COURSE.item(SDPA), source)
    names = tuple(i.name for i in COURSE.exercises())
    grader = check_exercise([source], SDPA, COURSE.forbidden, names)
    message = forbidden_message(SDPA, fn)
    assert grader and message.startswith(f"`{SDPA}` may not rely on ") and message.count("\n") == 0
    if "attend" not in source:
        assert message == refusal(SDPA, grader)
    else:
        assert "the built-in torch._C._nn.scaled_dot_product_attention" in message, message


@pytest.mark.parametrize("item", FORBIDDING, ids=lambda i: i.name)
def test_the_visible_check_passes_the_reference_and_every_alternative(installed, item):
    for text in [answer_source(COURSE, item), *item.alternatives]:
        assert forbidden_message(item.name, define(COURSE, item, text)) == "", text


class _Shell:
    def __init__(self, cells):
        self.history_manager = type("History", (), {"input_hist_raw": ["", *cells]})()


def test_the_visible_check_reads_the_session_history(installed, monkeypatch):
    """In a kernel the check reads the cells the session ran, as the grader reads the notebook:
    the helper and alias cells the answer uses are read, a scratch cell is not."""
    import IPython

    answer = "def scaled_dot_product_attention(q, k, v, mask=None):\n    return helper(q), q\n"
    shell = _Shell(
        [
            "import torch.nn.functional as G\nattend = G.scaled_dot_product_attention",
            "def helper(q):\n    return attend(q, q, q)",
            answer,
            "import os\nprint(os.getcwd())",
        ]
    )
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    fn = define(COURSE, COURSE.item(SDPA), answer)
    message = forbidden_message(SDPA, fn)
    assert message.startswith(f"`{SDPA}` may not rely on the built-in G.scaled_dot_product_attention"), message
    shell.history_manager.input_hist_raw.append("def helper(q):\n    return q")  # the student fixes the helper
    assert forbidden_message(SDPA, fn) == ""
