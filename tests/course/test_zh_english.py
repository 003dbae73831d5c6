"""No English where a student of the zh-CN edition reads.

Scanned: every markdown cell, every text output and every comment and string of the zh-CN release
(the exercise stubs included), the stored printed output of the zh-CN notebooks, README.zh-CN.md,
every translated message of messages.po (checks, feedback, plot and widget labels) and the
schematic's figure text. Allowed: code (in backticks, in code, identifiers), maths (but not an
English word as a subscript in Chinese prose: $v_{cat}$), links, the short allowlist below (proper
names and names PyTorch gives), and PyTorch's own error text, which the course always introduces
with a Chinese line.
"""

from __future__ import annotations

import builtins
import io
import keyword
import re
import tokenize

import nbformat
import pytest
from babel.messages.pofile import read_po
from zh_reading import figure_texts, printed_outputs, readme_text

from attention_course.model import manifest

COURSE = manifest.load()
RELEASE = COURSE.release_dir("zh-CN")

# Proper names, product names and the names of things in code that prose may use as they are.
ALLOWLIST = {
    "attention",
    "batch_first",
    "bert",
    "binder",
    "d2l",
    "gelu",
    "gpt",
    "jupyter",
    "jupyterlab",
    "layernorm",
    "matplotlib",
    "nanogpt",
    "nbgrader",
    "numpy",
    "python",
    "pytorch",
    "softmax",
    "transformer",
    "vaswani",
    "shift",
    "enter",
    "torch",
    "ipywidgets",
    "tensor",
    "true",
    "false",
    "none",
    "float",
    "dtype",
    "cuda",
    "cpu",
    "gib",
    "mib",
    "nan",
    "inf",
    "relu",
    "adam",
    "sgd",
    "kernel",
    "html",
    "url",
    "api",
    "nn",
    "et",
    "al",
    # PyTorch's names for the operations the course teaches, quoted in prose as they are
    "view",
    "transpose",
    "reshape",
    "permute",
    "contiguous",
    "stride",
    "exp",
    "tril",
    "matmul",
    "masked_fill",
    "dim",
    "self",
}
# Python's keywords and built-ins, and the names of the course's exercises and their arguments
ALLOWLIST |= {w.lower() for w in keyword.kwlist + dir(builtins)}
ALLOWLIST |= {
    n.lower()
    for item in COURSE.exercises()
    for n in [item.name, *item.spec.get("args", []), *item.spec.get("outputs", []), *item.spec.get("optional", [])]
}

_CODE = re.compile(
    r"```.*?```|`[^`]*`|\{[^{}\n]*\}|\$\$.*?\$\$|\$[^$\n]*\$|<[^>]+>|\]\([^)]*\)|https?://\S+|[!-_a-~]*[_.=/\\][!-_a-~]*",
    re.S,
)
_WORD = re.compile(r"(?<![\w-])[A-Za-z]{3,}(?![\w(\[-])")
# An English term glossed in full-width parentheses after the Chinese one, as d2l does:
# 置换等变（permutation equivariant）
_GLOSS = re.compile(r"(?<=[\u4e00-\u9fff])（[A-Za-z][A-Za-z -]*）")


def _without_english_column(text: str) -> str:
    """Markdown tables without their 英文 column (a bilingual table of names)."""
    lines, column = [], None
    for line in text.splitlines():
        cells = line.strip().strip("|").split("|") if line.lstrip().startswith("|") else None
        if cells is None:
            column = None
        elif column is None and any(c.strip() == "英文" for c in cells):
            column = [c.strip() for c in cells].index("英文")
        if cells is not None and column is not None and column < len(cells):
            del cells[column]
            line = "|".join(cells)
        lines.append(line)
    return "\n".join(lines)


# Product names written as their makers write them, and a name of the interface glossed in Chinese
# right after it: Validate（验证）.
_NAMES = re.compile(r"The Littlest JupyterHub|Zero to JupyterHub|\b[A-Z][a-z]+（[\u4e00-\u9fff]+）")


def english_words(text: str) -> list[str]:
    """Latin-letter words of three letters or more outside code, maths, links, markup and glosses."""
    words = _WORD.findall(_CODE.sub(" ", _GLOSS.sub(" ", _NAMES.sub(" ", _without_english_column(text)))))
    words = [w for w in words if w.lower() not in ALLOWLIST and not re.fullmatch(r"[A-Z][a-z]*[A-Z]\w*", w)]
    return words + _maths_words(text)


# An English word as a subscript in maths ($v_{cat}$); the course's own subscripts are names.
_SUBSCRIPT = re.compile(r"_\{(?:\\text\{)?([A-Za-z]{3,})\}")
SUBSCRIPT_NAMES = {"model", "head", "embd", "attn", "proj", "drop", "max", "out"}


def _maths_words(text: str) -> list[str]:
    maths = re.findall(r"\$\$.*?\$\$|\$[^$\n]*\$", text, re.S)
    return [w for m in maths for w in _SUBSCRIPT.findall(m) if w.lower() not in SUBSCRIPT_NAMES | ALLOWLIST]


def test_the_scanner_finds_english_and_leaves_code_alone():
    assert english_words("缩放点积注意力 computes `q @ k.T` using softmax") == ["computes", "using"]
    assert english_words("形状 $(B, T, d_{model})$，见 [01](01_scaling_problem.ipynb)") == []


def _comments_and_strings(source: str) -> list[str]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return [  # comments, and strings that are prose (a key such as "raw" is code)
        t.string
        for t in tokens
        if t.type == tokenize.COMMENT or (t.type == tokenize.STRING and re.search(r"\w\s+\w", t.string))
    ]


_EXCEPTION = re.compile(r"\b[A-Z]\w*(Error|Exception|Warning)\b")
CJK = re.compile(r"[\u4e00-\u9fff]")


def _pytorch_lines(text: str) -> str:
    """Text without lines that quote an exception (PyTorch's own words, introduced in Chinese)."""
    return "\n".join(line for line in text.splitlines() if not _EXCEPTION.search(line))


def unintroduced_exceptions(text: str) -> list[str]:
    """Lines of printed output that quote an exception with no Chinese line right before them."""
    lines = text.splitlines()
    return [line for i, line in enumerate(lines) if _EXCEPTION.match(line) and not (i and CJK.search(lines[i - 1]))]


def _release_texts() -> list[tuple[str, str]]:
    found = []
    for path in sorted(RELEASE.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            where = f"{path.name}#{i}"
            if cell.cell_type == "markdown":
                found.append((where, cell.source))
            elif cell.cell_type == "code":
                found += [(where, s) for s in _comments_and_strings(cell.source)]
                for output in cell.get("outputs", []):
                    text = output.get("text") or output.get("data", {}).get("text/plain", "")
                    if "image/png" not in output.get("data", {}):
                        found.append((where + " output", _pytorch_lines("".join(text))))
    return found


def _message_texts() -> list[tuple[str, str]]:
    with (manifest.REPO / "i18n" / "zh-CN" / "messages.po").open("rb") as handle:
        return [
            (f"messages.po: {str(m.id)[:50]}", _pytorch_lines(m.string))
            for m in read_po(handle)
            if m.id and isinstance(m.string, str) and m.string
        ]


def _without_corpus(text: str) -> str:
    """The sentences of the English text the small model of 04 was trained on are its data, shown as
    read (a Chinese student sees the same English sentence): they are left out of the scan."""
    from helpers.text_corpus import probe_sentences

    for sentence in probe_sentences():
        text = text.replace(repr(sentence), " ").replace(sentence, " ")
    return text


SOURCES = {
    "release": _release_texts,
    "messages": _message_texts,
    "outputs": lambda: [(w, _without_corpus(_pytorch_lines(t))) for w, t in printed_outputs()],
    "readme": readme_text,
    "figures": figure_texts,
}


@pytest.mark.parametrize("source", SOURCES)
def test_no_english_where_a_student_reads(source):
    texts = SOURCES[source]()
    found = [(where, words) for where, text in texts if (words := english_words(text))]
    assert not found, "\n".join(f"{where}: {' '.join(words)}" for where, words in found)


def test_the_chinese_exercise_stub_comes_from_nbgrader_code_stub():
    sources = [c.source for p in RELEASE.glob("*.ipynb") for c in nbformat.read(p, as_version=4).cells]
    stub = COURSE.edition("zh-CN").code_stub.splitlines()[0]  # indented inside a function or class
    assert sum(stub in s for s in sources) == len(COURSE.exercises())
    assert not any("YOUR CODE HERE" in s for s in sources)


def test_pytorch_errors_are_introduced_in_chinese():
    found = [(w, line) for w, text in printed_outputs() for line in unintroduced_exceptions(text)]
    assert not found, "\n".join(f"{w}: {line}" for w, line in found)


PLANTED = [
    ("an English label in printed output", "outputs", "tt.reshape(6): [0, 3, 1, 4, 2, 5]  shares memory with t: False"),
    ("an English subscript in Chinese prose", "readme", "加权求和 $0.5\\,v_{cat} + 0.5\\,v_{mat}$"),
    ("an English button name without a gloss", "readme", "提交之前，可以用 Validate 按钮检查一个笔记本。"),
]


@pytest.mark.parametrize("kind, source, planted", PLANTED, ids=[k for k, _, _ in PLANTED])
def test_a_planted_english_finding_fails_the_guard(kind, source, planted):
    where, text = SOURCES[source]()[0]
    assert not english_words(text)
    assert english_words(text + "\n" + planted + "\n"), kind


def test_a_planted_bare_pytorch_error_fails_the_guard():
    error = "RuntimeError: view size is not compatible with input tensor's size and stride"
    assert unintroduced_exceptions(f"tt.reshape(6): [0, 3]\n{error}")
    assert not unintroduced_exceptions(f"这次调用抛出了异常，下面是异常信息的原文：\n{error}")
