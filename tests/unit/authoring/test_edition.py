"""The Chinese edition: complete, in step with the English source, generated (never edited by
hand), saying the same things with the same placeholders, and drawing Chinese in its plots."""

from __future__ import annotations

import re
import string
import subprocess
import sys
import warnings

import nbformat
import pytest

from attention_course.authoring.edition import (
    _code_skeleton,
    catalogue_dir,
    cell_units,
    compile_messages,
    merged,
    problems,
    read_catalogue,
    translate_notebook,
)
from attention_course.model.manifest import load

COURSE = load()
OTHERS = [e for e in COURSE.editions if e.language != "en"]


@pytest.mark.parametrize("edition", OTHERS, ids=lambda e: e.name)
def test_every_unit_is_translated_and_none_is_stale(edition):
    found = problems(COURSE, edition.language)
    assert not found, f"{len(found)} unit(s) missing or stale (make translations):\n" + "\n".join(found[:30])


def test_changing_one_english_sentence_makes_its_translation_stale(tmp_path):
    """The stale-translation check can fail: edit one markdown cell of a copy of the course."""
    import shutil

    for name in ("course.toml", "nbgrader_config.py"):
        shutil.copy(COURSE.root / name, tmp_path / name)
    shutil.copytree(COURSE.root / "source" / "attention", tmp_path / "source" / "attention")
    shutil.copytree(COURSE.root / "i18n", tmp_path / "i18n")
    copy = load(tmp_path)
    path = copy.source_notebook("01_scaling_problem")
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "markdown")
    cell.source = cell.source.replace("The", "Thee", 1) if "The" in cell.source else cell.source + " (changed)"
    nbformat.write(nb, path)
    found = problems(copy, "zh-CN")
    assert any(f"01_scaling_problem/{cell.id}" in line and line.startswith("stale") for line in found), found


@pytest.mark.parametrize("edition", OTHERS, ids=lambda e: e.name)
def test_the_edition_is_generated_from_the_catalogue(edition):
    """The committed source of the edition is what the catalogue makes of the English (its
    cells; it has no copy of the helpers, and its folder's name gives its language); only stored
    outputs come from running it."""
    catalog = merged(COURSE, edition.language)
    for notebook in COURSE.notebooks:
        want = translate_notebook(COURSE, notebook, catalog)
        have = nbformat.read(COURSE.source_notebook(notebook, edition.name), as_version=4)
        assert [(c.cell_type, c.source) for c in have.cells] == [(c.cell_type, c.source) for c in want.cells], (
            f"{notebook}: source/{edition.assignment} differs from the catalogue; run make outputs"
        )
    for folder in (COURSE.source_dir(edition.name), COURSE.release_dir(edition.name)):
        assert not (folder / "helpers").exists(), f"{folder}: a copy of the helpers (they are installed)"
    from helpers.i18n import edition_language

    assert edition_language(COURSE.source_dir(edition.name)) == edition.language
    assert edition_language(COURSE.release_dir(edition.name)) == edition.language
    assert edition_language(COURSE.release_dir()) == "en"


@pytest.mark.parametrize("edition", OTHERS, ids=lambda e: e.name)
def test_the_compiled_messages_are_those_of_the_catalogue(edition, tmp_path, monkeypatch):
    mo = COURSE.data_dir / "locale" / edition.language.replace("-", "_") / "LC_MESSAGES" / "course.mo"
    before = mo.read_bytes()
    compile_messages(COURSE, edition.language, merged(COURSE, edition.language))
    assert mo.read_bytes() == before, "helpers/data/locale is out of date: run make outputs"


def _fields(text: str) -> list[str]:
    return sorted(
        f"{{{name}{'!' + conv if conv else ''}{':' + spec if spec else ''}}}"
        for _, name, spec, conv in string.Formatter().parse(text)
        if name is not None
    )


def _words_as_subscripts(maths: str) -> str:
    """Maths with a word as its subscript blanked ($v_{cat}$, $v_{\\text{猫}}$): a word is prose, translated."""
    return re.sub(r"_\{(?:\\text\{)?(?:[A-Za-z]{3,}|[\u4e00-\u9fff]+)\}?\}", "_{}", maths)


@pytest.mark.parametrize("edition", OTHERS, ids=lambda e: e.name)
def test_messages_keep_their_placeholders_and_markup(edition):
    bad = []
    for message in read_catalogue(COURSE, edition.language):
        if not message.id or not message.string:
            continue
        if (message.context or "").split("/")[0] in COURSE.notebooks:
            english, chinese = message.id, message.string  # cells: code spans and math stay
            for pattern in (r"`[^`\n]+`", r"\$[^$\n]+\$"):
                missing = {_words_as_subscripts(m) for m in re.findall(pattern, english)} - {
                    _words_as_subscripts(m) for m in re.findall(pattern, chinese)
                }
                if missing:
                    bad.append(f"{message.context}: lost {sorted(missing)[:3]}")
            continue
        try:
            if _fields(message.id) != _fields(message.string):
                bad.append(f"{message.id[:60]!r}: placeholders {_fields(message.id)} vs {_fields(message.string)}")
        except ValueError as exc:
            bad.append(f"{message.id[:60]!r}: {exc}")
    assert not bad, "\n".join(bad[:30])


@pytest.mark.parametrize("edition", OTHERS, ids=lambda e: e.name)
def test_translated_code_cells_are_the_same_code(edition):
    catalog = read_catalogue(COURSE, edition.language)
    for notebook in COURSE.notebooks:
        for context, source, kind in cell_units(COURSE, notebook):
            message = catalog.get(source, context=context)
            if kind == "code" and message is not None and message.string:
                assert _code_skeleton(message.string) == _code_skeleton(source), context


def test_the_catalogue_has_one_file_per_notebook_and_one_for_messages():
    names = sorted(p.stem for p in catalogue_dir(COURSE, "zh-CN").glob("*.po"))
    assert names == sorted([*COURSE.notebooks, "messages"])


def test_every_check_message_speaks_chinese_in_the_chinese_edition():
    from helpers.checks import check
    from helpers.feedback import CheckFailed
    from helpers.i18n import using

    with using("zh-CN"):
        with pytest.raises(CheckFailed) as failed:
            check("raw_scores", lambda q, k: q @ k)
        assert re.search(r"[\u4e00-\u9fff]", str(failed.value)), str(failed.value)
        for question in (COURSE.questions()[0], COURSE.numeric_questions()[0]):
            with pytest.raises(CheckFailed) as failed:
                check(question.name, "Z")
            assert re.search(r"[\u4e00-\u9fff]", str(failed.value)), str(failed.value)


def test_plots_draw_chinese_without_missing_glyphs(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from helpers import plots
    from helpers.fonts import use_language_fonts
    from helpers.i18n import using

    try:
        with using("zh-CN"), warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*[Gg]lyph.*")  # "Glyph ... missing from font" fails
            assert use_language_fonts() is not None, "no CJK font: apt-get install fonts-noto-cjk"
            import torch

            plots.attention_heatmap(
                torch.full((3, 3), 1 / 3), ["小", "猫", "坐"], ["小", "猫", "坐"], title="注意力权重"
            )
            plt.gcf().savefig(tmp_path / "zh.png")
            from helpers import schematic

            schematic.pipeline_figure("mix").savefig(tmp_path / "schematic.png")
    finally:
        plt.close("all")
        matplotlib.rcParams.update(matplotlib.rcParamsDefault)


def test_importing_the_helpers_leaves_matplotlib_alone_until_a_figure_is_drawn():
    """In a Chinese folder, importing the plotting helpers changes no matplotlib setting (and scans
    no font); the first figure sets the CJK font."""
    code = (
        "import matplotlib; matplotlib.use('Agg'); from matplotlib import rcParams\n"
        "before = dict(rcParams)\n"
        "from helpers import plots, dk_lab, heads_lab, schematic\n"
        "assert dict(rcParams) == before, 'an import changed matplotlib settings'\n"
        "import torch; plots.attention_heatmap(torch.eye(2), ['a', 'b'], ['a', 'b'])\n"
        "print(rcParams['font.sans-serif'][0])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=COURSE.source_dir("zh-CN"), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "CJK" in proc.stdout or "Hei" in proc.stdout or "Han" in proc.stdout, proc.stdout


def test_no_stored_figure_misses_a_glyph():
    """A figure drawn with a character its font lacks warns "Glyph ... missing from font(s)" and
    shows a box: no stored output of either edition may carry that warning."""
    import nbformat

    from conftest import REPO

    found = []
    for path in sorted((REPO / "source").glob("*/*.ipynb")):
        for number, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for output in cell.get("outputs", []):
                if "missing from font" in "".join(output.get("text", "")):
                    found.append(f"{path.parent.name}/{path.name} cell {number}")
    assert not found, found
