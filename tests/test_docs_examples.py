"""The code README.md and docs/*.md show works as shown.

Every fenced ``python`` block runs: the blocks of one page in order, sharing one
namespace, in a folder of the page's own that holds a copy of the bundled example
(``data/``, and its ``manifest.yaml``, ``suite.yaml`` and ``trials/`` at the top, where a
page's ``load_experiment("manifest.yaml", "suite.yaml")`` looks). A statement whose line
ends ``# -> VALUE`` is checked: its value equals the literal ``VALUE`` (a number to the
digits shown), or prints as ``VALUE``; after two spaces the comment may go on in words.

Every ``agenticlens-frames`` command line of a fenced shell block (``$ `` prompts,
backslash continuations and a YAML ``- run:`` step included) is parsed by the real
command line, its options' choices, ranges and callbacks included, with every command
replaced by a recorder, so nothing runs. A synopsis line is expanded first: ``[...]``
marks an optional part, ``a|b`` tries every choice and an upper-case word
(``MANIFEST``, ``N``) stands for a value from :data:`PLACEHOLDERS`. A ``console`` block
is a session: its commands run for real, in order, in a fresh folder with the example.

An HTML comment right before a fence (invisible on GitHub) tells this test what a block
needs:

``<!-- docs-test: fakes=NAME,NAME -->``
    the block uses names the reader supplies (an agent, frames they have) or a service
    (a dask scheduler); the test provides them from :data:`FAKES`.
``<!-- docs-test: skip reason=WHY -->``
    the block cannot run here; the test reports the skip with WHY.
"""

from __future__ import annotations

import ast
import contextlib
import re
import shlex
import shutil
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import typer

from agenticlens_frames._optional import EXTRAS, available
from agenticlens_frames.cli import app

from .conftest import DATA, EXAMPLE, REPO, _require

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
_OUTPUT = re.compile(r"#\s*->\s*(?P<value>.+?)(?:\s{2,}.*)?$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page, with the ``docs-test`` directive before it."""

    page: Path
    line: int  # of the opening fence, 1-based
    info: str
    code: str
    skip: str | None = None
    fakes: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def _directive(page: Path, line: int, body: str) -> dict[str, Any]:
    """``skip reason=WHY`` or ``fakes=A,B`` as keyword arguments of :class:`Block`."""
    where = f"{page.relative_to(REPO)}:{line}"
    if body.startswith("skip"):
        reason = body.removeprefix("skip").strip().removeprefix("reason=").strip()
        assert body.startswith("skip reason=") and reason, (
            f"{where}: write <!-- docs-test: skip reason=WHY -->, saying why it cannot run"
        )
        return {"skip": reason}
    if body.startswith("fakes="):
        names = tuple(name.strip() for name in body.removeprefix("fakes=").split(","))
        unknown = [name for name in names if name not in FAKES]
        assert not unknown, f"{where}: no fake for {unknown}; FAKES has {sorted(FAKES)}"
        return {"fakes": names}
    raise AssertionError(f"{where}: unknown directive {body!r} (skip reason=... or fakes=...)")


def fenced_blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order (list-item indentation removed)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, index = [], 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        end = index + 1
        while end < len(lines) and not re.match(rf"^ *{fence[0]}{{{len(fence)},}}\s*$", lines[end]):
            end += 1
        assert end < len(lines), f"{page.name}:{index + 1}: the fence is never closed"
        options = {}
        previous = _DIRECTIVE.match(lines[index - 1]) if index else None
        if previous:
            options = _directive(page, index + 1, previous["body"])
        # a fence in a list item is indented: its lines lose that indentation
        body = lines[index + 1 : end]
        code = "\n".join(line[min(indent, len(line) - len(line.lstrip(" "))) :] for line in body)
        blocks.append(Block(page, index + 1, opening["info"].lower(), code, **options))
        index = end + 1
    return blocks


def _python_blocks() -> list[Block]:
    return [b for page in PAGES for b in fenced_blocks(page) if b.info in ("python", "py")]


# ------------------------------------------------------------------------------ fakes
# What a page leaves to its reader. Each fake takes the block's namespace, a monkeypatch
# undone after the block and an exit stack closed after it.

Fake = Callable[[dict[str, Any], pytest.MonkeyPatch, contextlib.ExitStack], None]


def _fake_agent(
    namespace: dict[str, Any], patch: pytest.MonkeyPatch, stack: contextlib.ExitStack
) -> None:
    """README's ``MyAgent(variant.model)``: the large model names what each case expects."""

    class MyAgent:
        def __init__(self, model: str) -> None:
            self.model = model

        def run(self, text: str) -> str:
            if self.model != "large":
                return "Sorry, I cannot help with that."
            return "Here is your tracking link." if "order" in text else "Plan cancelled."

    namespace["MyAgent"] = MyAgent


def _fake_build_agent(
    namespace: dict[str, Any], patch: pytest.MonkeyPatch, stack: contextlib.ExitStack
) -> None:
    """docs/live-runs.md's ``build_agent(variant)``: the agent answers with its model."""

    class Agent:
        def __init__(self, model: str) -> None:
            self.model = model

        def run(self, text: str) -> str:
            return f"{self.model}: a refund is on its way" if "Refund" in text else self.model

    namespace["build_agent"] = lambda variant: Agent(variant.model)


def _fake_frames(
    namespace: dict[str, Any], patch: pytest.MonkeyPatch, stack: contextlib.ExitStack
) -> None:
    """README's ``attempts``, ``variants`` and ``cases``: the bundled example's, as plain
    pandas frames from elsewhere (the README's later blocks slice it by its factors)."""
    from agenticlens_frames import load_experiment

    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    for name in ("attempts", "variants", "cases"):
        namespace[name] = pd.DataFrame(getattr(run, name)).astype(object)


def _fake_dask_scheduler(
    namespace: dict[str, Any], patch: pytest.MonkeyPatch, stack: contextlib.ExitStack
) -> None:
    """``Client("tcp://scheduler:8786")`` connects to an in-process cluster instead."""
    _require(available("distributed"), "the dask example needs the [dask] extra")
    import dask.distributed
    import distributed

    real = distributed.Client

    def client(address: object = None, **kwargs: Any) -> Any:
        cluster = stack.enter_context(
            distributed.LocalCluster(
                n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
            )
        )
        return stack.enter_context(real(cluster, **kwargs))

    # Both names: ``dask.distributed`` copies ``Client`` from ``distributed`` when first
    # imported, so once an earlier test has imported it, patching ``distributed`` alone
    # leaves the block's ``from dask.distributed import Client`` the real one (it then
    # waited 30 s for tcp://scheduler:8786 in the whole suite, and passed alone).
    patch.setattr(distributed, "Client", client)
    patch.setattr(dask.distributed, "Client", client)


#: Fakes a ``fakes=`` directive may name: each defines that name (several names may share
#: one fake, which is then applied once).
FAKES: dict[str, Fake] = {
    "MyAgent": _fake_agent,
    "build_agent": _fake_build_agent,
    "attempts": _fake_frames,
    "variants": _fake_frames,
    "cases": _fake_frames,
    "dask.distributed.Client": _fake_dask_scheduler,
}


# ------------------------------------------------------------------------- the runner


@dataclass
class Page:
    """One page's folder and namespace, shared by its blocks in order."""

    folder: Path
    namespace: dict[str, Any] = field(default_factory=lambda: {"__name__": "__docs__"})
    ran: set[int] = field(default_factory=set)  # the opening lines of the blocks run
    failed: set[int] = field(default_factory=set)


def _with_the_example(folder: Path) -> Path:
    """``folder`` with ``data/`` and the example's manifest, suite and trials at the top."""
    shutil.copytree(DATA, folder / "data", ignore=shutil.ignore_patterns("*.py"))
    for name in ("manifest.yaml", "suite.yaml"):
        shutil.copy(EXAMPLE / name, folder / name)
    shutil.copytree(EXAMPLE / "trials", folder / "trials")
    return folder


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[Path], Page]]:
    made: dict[Path, Page] = {}

    def page(path: Path) -> Page:
        if path not in made:
            made[path] = Page(_with_the_example(tmp_path_factory.mktemp(path.stem)))
        return made[path]

    yield page
    made.clear()


def _matches(value: Any, shown: str) -> bool:
    """Whether ``value`` is what a ``# -> shown`` comment shows."""
    try:
        literal = ast.literal_eval(shown)
    except (ValueError, SyntaxError):
        return shown in (str(value), repr(value))
    if isinstance(literal, bool) or isinstance(value, (bool, np.bool_)):
        # True must not pass for 1, nor 1 for True
        return isinstance(value, (bool, np.bool_)) and bool(value) is literal
    if isinstance(literal, float):
        decimals = len(shown.partition(".")[2])  # to the digits shown
        return bool(abs(float(value) - literal) <= 0.5 * 10.0**-decimals)
    return bool(value == literal)


def run_block(block: Block, namespace: dict[str, Any]) -> None:
    """Execute ``block`` statement by statement in ``namespace``, checking shown values.

    The code is padded to its line in the page, so a traceback names the page's line.
    """
    source = "\n" * block.line + block.code
    tree = ast.parse(source, filename=str(block.page))
    lines = source.splitlines()
    for statement in tree.body:
        shown = (
            _OUTPUT.search(lines[statement.end_lineno - 1])
            if isinstance(statement, ast.Expr)
            else None
        )
        if shown is None:
            module = ast.Module(body=[statement], type_ignores=[])
            exec(compile(module, str(block.page), "exec"), namespace)
            continue
        expression = ast.Expression(body=statement.value)
        value = eval(compile(expression, str(block.page), "eval"), namespace)
        assert _matches(value, shown["value"]), (
            f"{block.page.relative_to(REPO)}:{statement.lineno}: "
            f"{ast.get_source_segment(source, statement)} is {value!r}, the page shows "
            f"{shown['value']}"
        )


PYTHON_BLOCKS = _python_blocks()


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.where for b in PYTHON_BLOCKS])
def test_python_block_runs(
    block: Block, pages: Callable[[Path], Page], monkeypatch: pytest.MonkeyPatch
) -> None:
    page = pages(block.page)
    if block.skip:
        pytest.skip(f"{block.where}: {block.skip}")
    monkeypatch.chdir(page.folder)
    # the page's earlier blocks first, when this one is selected alone (-k)
    earlier = [
        b
        for b in PYTHON_BLOCKS
        if b.page == block.page and b.line < block.line and not b.skip and b.line not in page.ran
    ]
    for needed in [*earlier, block]:
        if needed is not block and needed.line in page.failed:
            continue  # reported by its own test; this block may still run without it
        try:
            with contextlib.ExitStack() as stack:
                for fake in dict.fromkeys(FAKES[name] for name in needed.fakes):
                    fake(page.namespace, monkeypatch, stack)
                run_block(needed, page.namespace)
        except Exception as failure:
            module = (getattr(failure, "name", None) or "").partition(".")[0]
            if isinstance(failure, ImportError) and (
                module in EXTRAS or "agenticlens-frames[" in str(failure)
            ):
                page.failed.add(needed.line)
                # an optional extra that is not installed: skipped locally, a failure in CI
                _require(False, f"{needed.where} needs an optional extra: {failure}")
            before = sorted(line for line in page.failed if line < needed.line)
            note = f" (before {block.where}, which shares its names)" if needed is not block else ""
            if before:  # the blocks share names: an earlier failure may be the cause
                note += f" (after the failed block(s) at line {', '.join(map(str, before))})"
            page.failed.add(needed.line)
            trace = traceback.format_exc()
            pytest.fail(f"{needed.where} failed{note}:\n{trace}", pytrace=False)
        page.ran.add(needed.line)


def test_every_page_with_code_is_found_and_every_fake_is_used() -> None:
    """The runner sees the pages' blocks (a fence it cannot read would silently drop a
    block), and a fake is named only by a block that uses the name."""
    counts = {page.name: sum(b.page == page for b in PYTHON_BLOCKS) for page in PAGES}
    assert counts["README.md"] >= 7 and counts["archives.md"] >= 3, counts
    assert sum(counts.values()) >= 16, counts
    for block in PYTHON_BLOCKS:
        for name in block.fakes:
            assert name.rpartition(".")[2] in block.code, (block.where, name)
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines[:-1], 1):
            # a directive away from its fence would be ignored without a word
            misplaced = _DIRECTIVE.match(line) and not _FENCE.match(lines[number])
            assert not misplaced, (
                f"{page.name}:{number}: a docs-test directive goes right before a fence"
            )
        for block in fenced_blocks(page):
            assert block.info in {"", "python", "py", "bash", "console", "yaml", "json", "text"}, (
                f"{block.where}: unknown fence info {block.info!r}"
            )


# ------------------------------------------------------------------ the command lines

#: What a synopsis's upper-case words stand for (a value the option's type accepts).
PLACEHOLDERS = {
    "MANIFEST": "manifest.yaml",
    "SUITE": "suite.yaml",
    "REPORT.json": "report.json",
    "N": "100",
    "FILE": "summary.md",
    "DIR": "out",
    "FIELD": "topic",
    "DIMENSION=MARGIN": "quality=0.02",
}
_PLACEHOLDER = re.compile(r"[A-Z][A-Z_]*(=[A-Z_]+)?(\.json)?")


@dataclass(frozen=True)
class CommandLine:
    """One ``agenticlens-frames`` command line of a page (continuations joined)."""

    where: str
    text: str


def command_lines(page: Path) -> list[CommandLine]:
    """Every ``agenticlens-frames`` command of a fenced block of ``page`` that is not
    Python: a shell line, after a ``$ `` prompt, or a YAML step's ``- run:``."""
    found = []
    for block in fenced_blocks(page):
        if block.info in ("python", "py") or block.skip:
            continue
        lines = block.code.splitlines()
        index = 0
        while index < len(lines):
            start, text = index, lines[index]
            while text.rstrip().endswith("\\") and index + 1 < len(lines):
                index += 1
                text = text.rstrip()[:-1] + " " + lines[index].strip()
            index += 1
            # a prompt, a YAML step, environment variables set for the command
            text = re.sub(r"^\s*(\$\s+|-\s+run:\s+)?([A-Z_][A-Z0-9_]*=\S*\s+)*", "", text)
            if text.startswith("agenticlens-frames"):
                where = f"{page.relative_to(REPO)}:{block.line + 1 + start}"
                found.append(CommandLine(where, text))
    return found


def expand(line: CommandLine) -> list[list[str]]:
    """The argument lists a (synopsis) line stands for: optional parts included,
    placeholders filled, each ``a|b`` choice tried once."""
    tokens = []
    for token in shlex.split(line.text, comments=True)[1:]:
        token = token.strip("[]")
        if token in ("", "..."):
            continue
        if _PLACEHOLDER.fullmatch(token):
            assert token in PLACEHOLDERS, f"{line.where}: add {token!r} to PLACEHOLDERS"
            token = PLACEHOLDERS[token]
        tokens.append(token.split("|") if "|" in token else [token])
    first = [choices[0] for choices in tokens]
    variants = [first]
    for position, choices in enumerate(tokens):
        variants += [[*first[:position], other, *first[position + 1 :]] for other in choices[1:]]
    return variants


def _recording_cli() -> tuple[Any, list[dict[str, Any]]]:
    """The real command tree with every command's body replaced by a recorder: a line
    goes through parsing, choices, ranges and option callbacks, and runs nothing."""
    root = typer.main.get_command(app)
    calls: list[dict[str, Any]] = []
    todo = [root]
    while todo:
        command = todo.pop()
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            command.callback = lambda **params: calls.append(params)
        todo += list((subcommands or {}).values())
    return root, calls


COMMAND_LINES = [line for page in PAGES for line in command_lines(page)]


@pytest.mark.parametrize("line", COMMAND_LINES, ids=[line.where for line in COMMAND_LINES])
def test_command_line_parses(line: CommandLine) -> None:
    root, calls = _recording_cli()
    for args in expand(line):
        if args[0].startswith("-"):
            # the program's own options (--version, --install-completion) act when
            # parsed: they are looked up instead
            own = {name for param in root.params for name in param.opts}
            assert set(args) <= own, f"{line.where}: {sorted(set(args) - own)} not in {own}"
            continue
        before = len(calls)
        try:
            root.main(args, prog_name="agenticlens-frames", standalone_mode=False)
        except Exception as refused:
            # click's usage errors say what is wrong in the CLI's own words
            message = refused.format_message() if hasattr(refused, "format_message") else ""
            message = message or repr(refused)
            pytest.fail(f"{line.where}: `agenticlens-frames {shlex.join(args)}`: {message}")
        assert len(calls) == before + 1, f"{line.where}: {args} reached no command"


def _console_sessions() -> list[list[CommandLine]]:
    """The ``console`` blocks' commands: each block a session, replayed in order."""
    sessions = []
    for page in PAGES:
        for block in fenced_blocks(page):
            if block.info == "console" and not block.skip:
                on_page = command_lines(page)
                first, last = block.line, block.line + block.code.count("\n") + 1
                lines = [c for c in on_page if first < int(c.where.rpartition(":")[2]) <= last]
                sessions += [lines] if lines else []
    return sessions


SESSIONS = _console_sessions()


@pytest.mark.parametrize("session", SESSIONS, ids=[s[0].where for s in SESSIONS])
def test_console_session_runs(
    session: list[CommandLine], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``console`` block is a session a reader types: run for real, in order, on the
    bundled example, every command exits 0."""
    from typer.testing import CliRunner

    monkeypatch.chdir(_with_the_example(tmp_path))
    for line in session:
        (args,) = expand(line)  # a session shows no synopsis
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, (line.where, result.output, result.exception)


def test_the_command_line_check_can_fail() -> None:
    """The check refuses what the CLI refuses: an unknown option, a value outside the
    choices, a flag given a value, an option without its value, a bad gate."""
    for bad in (
        "agenticlens-frames experiment run m.yaml s.yaml --no-such-option",
        "agenticlens-frames experiment run m.yaml s.yaml [--correction holm|sidak]",
        "agenticlens-frames experiment report r.json --html",
        "agenticlens-frames archive ls runs/ --json yes",
        "agenticlens-frames experiment run m.yaml s.yaml --noninferiority speed=1",
        "agenticlens-frames experiment run m.yaml s.yaml --alpha 5",
    ):
        with pytest.raises(pytest.fail.Exception):
            test_command_line_parses(CommandLine("test", bad))


def test_every_command_line_of_the_pages_is_found() -> None:
    wheres = {line.where.partition(":")[0] for line in COMMAND_LINES}
    assert {"README.md", "docs/archives.md", "docs/judges.md", "docs/live-runs.md"} <= wheres
    assert len(COMMAND_LINES) >= 19, COMMAND_LINES
    assert [len(session) for session in SESSIONS] == [4], SESSIONS  # docs/archives.md
