"""Language editions, generated from the one English source and a translation catalogue.

The English notebooks and helpers are the source of truth. `i18n/<language>.po` (gettext, one
file per language) holds the translations, each keyed to the English unit it translates:
- a notebook cell: context `<notebook>/<cell id>`, the English source as msgid (markdown
  cells, and code cells that have comments or strings; test cells are never translated, and a
  translated code cell must be the same code: only its comments and strings may differ);
- a message of the checks, labs, plots and grader: the English text as msgid (extracted from
  `_()`, `N_()` and `pgettext()` calls in helpers/ and attention_course/);
- a sentence of the manifest: a mistake's sentence (context `mistake/<exercise>/<name>`), a
  question and its options, a practice question's explanations, and a graded question's
  explanations (context `explain/<question>`: the grader reads them from the catalogue, and they
  are never compiled into the helpers a student receives).
When an English unit changes, its translation becomes stale (gettext's "fuzzy") and the tests
fail until a translator updates it.

    python -m attention_course.authoring.edition --report   # what is missing or stale (make translations)
    python -m attention_course.authoring.edition --update   # merge new units into the catalogues, for translators
    python -m attention_course.authoring.edition zh-CN      # compile the messages, write source/<assignment>/
"""

from __future__ import annotations

import argparse
import ast
import datetime
import io
import sys
import tokenize
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import write_po

from attention_course.model.catalogue import DOMAIN, GRADER_ONLY, catalogue_dir, read_catalogue
from attention_course.model.manifest import Course, load
from helpers.cells import is_test_cell

from .question_cells import question_of, render_cells

KEYWORDS = {"_": None, "N_": None, "pgettext": ((1, "c"), 2)}
PACKAGE = Path(__file__).resolve().parents[1]  # attention_course: its messages (besides the helpers')


MESSAGES = "messages"  # the catalogue file of everything that is not a notebook cell


def _file_of(course: Course, message) -> str:
    """The catalogue file a unit belongs in: its notebook's, or messages."""
    notebook = (message.context or "").split("/")[0]
    return notebook if notebook in course.notebooks else MESSAGES


def _has_words(source: str) -> bool:
    """A code cell worth translating: it has a comment or a string with letters in it."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return False
    return any(
        t.type in (tokenize.COMMENT, tokenize.STRING)
        and any(c.isalpha() for c in t.string)
        and not t.string.startswith(("# NBVAL", "### "))
        for t in tokens
    )


def cell_units(course: Course, notebook: str) -> list[tuple[str, str, str]]:
    """(context, English source, kind) of every translatable cell of an English notebook."""
    nb = nbformat.read(course.source_notebook(notebook), as_version=4)
    units = []
    for cell in nb.cells:
        if question_of(cell):
            continue  # written from the manifest, whose question and options the catalogue translates
        if cell.cell_type == "markdown" and cell.source.strip():
            units.append((f"{notebook}/{cell.id}", cell.source, "markdown"))
        elif cell.cell_type == "code" and not is_test_cell(cell) and _has_words(cell.source):
            units.append((f"{notebook}/{cell.id}", cell.source, "code"))
    return units


def template(course: Course) -> Catalog:
    """Every translatable unit of the English course (what a complete catalogue translates)."""
    catalog = Catalog(project="attention-course", domain=DOMAIN)
    for notebook in course.notebooks:
        for context, source, kind in cell_units(course, notebook):
            catalog.add(source, context=context, auto_comments=[f"{kind} cell"])
    sources = [
        *((path, path.relative_to(course.root)) for path in sorted(course.helpers_dir.glob("*.py"))),
        *((path, path.relative_to(PACKAGE.parent)) for path in sorted(PACKAGE.rglob("*.py"))),
    ]
    for path, where in sources:
        for lineno, message, _comments, context in extract_from_file("python", str(path), keywords=KEYWORDS):
            if isinstance(message, tuple):
                message = message[-1]
            catalog.add(message, context=context, locations=[(where.as_posix(), lineno)])
    from helpers.i18n import WORDS

    for text in WORDS:
        catalog.add(text, context="word", auto_comments=["a word of the toy sentences"])
    for item in course.items:
        for mistake in item.mistakes.values():
            catalog.add(mistake.sentence, context=f"mistake/{item.name}/{mistake.name}", auto_comments=["mistake"])
        for text in [item.spec.get("question", ""), item.spec.get("unit", ""), *item.spec.get("options", {}).values()]:
            if text:
                catalog.add(text, auto_comments=[f"question {item.name}"])
        for text in item.explanations.values():
            catalog.add(text, context=f"{GRADER_ONLY}{item.name}", auto_comments=["graded question: feedback only"])
    for practice in course.practice:
        for text in [practice.question, *practice.options.values(), *practice.explain.values()]:
            catalog.add(text, auto_comments=[f"practice question {practice.name}"])
    return catalog


def merged(course: Course, language: str) -> Catalog:
    """The catalogue brought up to date with the English units (changed ones marked fuzzy)."""
    catalog = read_catalogue(course, language)
    catalog.update(template(course), update_header_comment=False, keep_user_comments=True)
    return catalog


def problems(course: Course, language: str) -> list[str]:
    """What is missing or stale in a language's catalogue (empty when it is complete)."""
    found = []
    for message in merged(course, language):
        if not message.id:
            continue
        where = message.context or (message.locations[0][0] if message.locations else "message")
        first = str(message.id).splitlines()[0][:70]
        if message.fuzzy:
            found.append(f"stale: {where}: {first!r} (the English changed; update the translation)")
        elif not message.string:
            found.append(f"missing: {where}: {first!r}")
    return found


def _code_skeleton(source: str) -> str:
    """Code with its strings, docstrings and comments blanked: what must not change in translation."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
        if isinstance(node, ast.JoinedStr):
            node.values = []
    return ast.dump(tree)


def _translated(catalog: Catalog, text: str) -> str:
    message = catalog.get(text)
    return message.string if message is not None and message.string and not message.fuzzy else text


def translate_notebook(course: Course, notebook: str, catalog: Catalog) -> nbformat.NotebookNode:
    """An English source notebook with every translatable cell replaced by its translation."""
    nb = nbformat.read(course.source_notebook(notebook), as_version=4)
    for cell in nb.cells:
        context = f"{notebook}/{cell.id}"
        message = catalog.get(cell.source, context=context)
        if message is None or not message.string or message.fuzzy:
            continue
        if cell.cell_type == "code" and _code_skeleton(message.string) != _code_skeleton(cell.source):
            raise ValueError(f"{context}: the translation changes the code, not only its comments and strings")
        cell.source = message.string
    render_cells(course, nb, lambda text: _translated(catalog, text))
    nb.metadata["language"] = str(catalog.locale).replace("_", "-") if catalog.locale else ""
    nb.metadata.pop("widgets", None)
    return nb


def compile_messages(course: Course, language: str, catalog: Catalog) -> Path:
    """The messages (not the cells) as gettext's .mo in the helpers, for the checks and labs."""
    fixed = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)  # the same bytes every build
    messages = Catalog(
        locale=language.replace("-", "_"),
        domain=DOMAIN,
        project="attention-course",
        creation_date=fixed,
        revision_date=fixed,
    )
    for message in catalog:
        is_cell = (message.context or "").split("/")[0] in course.notebooks
        grader_only = (message.context or "").startswith(GRADER_ONLY)
        if message.id and message.string and not message.fuzzy and not is_cell and not grader_only:
            messages.add(message.id, message.string, context=message.context)
    path = course.data_dir / "locale" / language.replace("-", "_") / "LC_MESSAGES" / f"{DOMAIN}.mo"
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    write_mo(buffer, messages, use_fuzzy=False)
    path.write_bytes(buffer.getvalue())
    return path


def build_edition(course: Course, name: str) -> Path:
    """Bring the edition's catalogue up to date with the English units (new ones untranslated,
    changed ones stale), then write source/<assignment>/ of the edition: translated notebooks
    (outputs kept only where the code is unchanged: `make outputs` re-runs them). The helpers are not copied: every
    environment has them installed, and the folder's name tells them the language."""
    edition = course.edition(name)
    catalog = merged(course, edition.language)
    write_catalogue(course, edition.language, catalog)  # new English units land there, for translators
    missing = problems(course, edition.language)
    if missing:  # the edition is still built (those units stay in English); the tests fail until done
        print(
            f"WARNING: the {edition.language} catalogue lacks {len(missing)} unit(s), left in English; "
            f"translate them in {catalogue_dir(course, edition.language).relative_to(course.root)}/ "
            "and run `make outputs` again:\n  " + "\n  ".join(missing[:10])
        )
    compile_messages(course, edition.language, catalog)
    dest = course.source_dir(name)
    dest.mkdir(parents=True, exist_ok=True)
    for notebook in course.notebooks:
        translated = translate_notebook(course, notebook, catalog)
        path = dest / f"{notebook}.ipynb"
        if path.exists():  # keep the outputs of cells whose code did not change until they are re-run
            old = {c.id: c for c in nbformat.read(path, as_version=4).cells}
            for cell in translated.cells:
                if cell.cell_type == "code" and cell.id in old and old[cell.id].source == cell.source:
                    cell.outputs, cell.execution_count = old[cell.id].outputs, old[cell.id].execution_count
        nbformat.write(translated, path)
    return dest


# A fixed date: rewriting a catalogue changes no header line.
CATALOGUE_DATE = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def _empty_catalogue(locale) -> Catalog:
    """A catalogue with the course's header (no template placeholders, not fuzzy)."""
    return Catalog(
        locale=locale,
        domain=DOMAIN,
        project="attention-course",
        version="1",
        header_comment=(
            "# Translation of the attention course (notebooks, checks and feedback).\n"
            "# Edit the msgstr lines; `make translations` lists what is missing or out of date."
        ),
        copyright_holder="the attention course authors",
        msgid_bugs_address="the course's issue tracker",
        creation_date=CATALOGUE_DATE,
        revision_date=CATALOGUE_DATE,
        last_translator="the attention course authors",
        language_team="Simplified Chinese (zh-CN)",
        fuzzy=False,
    )


def write_catalogue(course: Course, language: str, catalog: Catalog) -> None:
    """Write a language's catalogue back, one file per notebook and messages.po."""
    folder = catalogue_dir(course, language)
    folder.mkdir(parents=True, exist_ok=True)
    parts: dict[str, Catalog] = {}
    for message in catalog:
        if message.id:
            # Babel reads a fuzzy entry's `#| msgid` lines back as translator comments: drop them,
            # or every rewrite would add them again as `# | ...` debris.
            if any(c.lstrip().startswith("|") for c in message.user_comments):
                message.user_comments = []  # the debris, wrapped over several comment lines
            part = parts.setdefault(_file_of(course, message), _empty_catalogue(catalog.locale))
            part[message.id] = message
    for name, part in parts.items():
        with open(folder / f"{name}.po", "wb") as handle:
            write_po(handle, part, width=100, sort_output=False, include_previous=True, omit_header=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("edition", nargs="?", help="build this edition's source folder")
    parser.add_argument("--report", action="store_true", help="list missing and stale translations")
    parser.add_argument("--update", action="store_true", help="merge new English units into the catalogues")
    args = parser.parse_args(argv)
    course = load(Path.cwd())  # the course this command runs in (a copy of it, in the tests)
    others = [e for e in course.editions if e.language != "en"]
    status = 0
    for edition in others:
        if args.update:
            write_catalogue(course, edition.language, merged(course, edition.language))
        if args.report or args.update:
            found = problems(course, edition.language)
            print(f"{edition.language}: {len(found)} unit(s) missing or stale" + "".join(f"\n  {p}" for p in found))
            status = status or bool(found)
    if args.edition:
        print(f"Wrote {build_edition(course, args.edition)}")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
