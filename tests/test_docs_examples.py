"""The code README.md, docs/*.md and every other Markdown page of the repository show
works as shown.

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
``<!-- docs-test: yaml=manifest|suite|fragment|ci -->``
    what a ``yaml`` block is, where its keys do not say it (see :func:`yaml_kind`).

Every ``yaml`` block is read by the project's own loaders (:func:`check_yaml`): a
manifest, or variants merged into a minimal live manifest, goes through
``run_experiment`` up to its first call (the manifest loader, the retry and header
rules, the comparisons settings); top-level keys (a ``comparisons:`` block) join the
bundled example's manifest, whose run is analysed with them; a suite goes through
``load_suite``, knowing the evaluators the page's Python files register. A documented key
the loaders refuse fails. A ``json`` block has no reader here yet: one fails until it
gets one.

A Python block whose first line is a file name (``# my_project/evals.py``) is that file:
:func:`documented_module` imports it, and the judge it registers is run end to end.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import json
import os
import re
import shlex
import shutil
import sys
import threading
import traceback
import types
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

#: Folders no page of ours is in (tools' and environments' files).
_NOT_PAGES = {"node_modules", "build", "dist", "__pycache__", "venv", "out"}


def _pages() -> list[Path]:
    """README.md first, then every other Markdown file of the repository, in path order
    (hidden folders and the environments' ones left out)."""
    found = []
    for folder, subfolders, files in os.walk(REPO):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d not in _NOT_PAGES]
        found += [Path(folder, name) for name in files if name.endswith(".md")]
    readme = REPO / "README.md"
    return [readme, *sorted((p for p in found if p != readme), key=lambda p: p.parts)]


PAGES = _pages()

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
_OUTPUT = re.compile(r"#\s*->\s*(?P<value>.+?)(?:\s{2,}.*)?$")


#: What a ``yaml`` block may be (a ``yaml=`` directive names one; see :func:`yaml_kind`).
YAML_KINDS = ("manifest", "suite", "fragment", "ci")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page, with the ``docs-test`` directive before it."""

    page: Path
    line: int  # of the opening fence, 1-based
    info: str
    code: str
    skip: str | None = None
    fakes: tuple[str, ...] = ()
    yaml: str | None = None  # what a yaml block is, when its directive says it

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
    if body.startswith("yaml="):
        kind = body.removeprefix("yaml=").strip()
        assert kind in YAML_KINDS, f"{where}: yaml= takes one of {YAML_KINDS}, not {kind!r}"
        return {"yaml": kind}
    raise AssertionError(
        f"{where}: unknown directive {body!r} (skip reason=..., fakes=... or yaml=...)"
    )


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


class _JudgeModel:
    """docs/judges.md's ``call_my_model(prompt)``: grades each prompt in turn 1.0
    ("good"), 0.5 ("partial"), 1.0, ... (so three samples of one output disagree), with
    a fixed latency, cost and tokens per call, and records every grade it gave."""

    GRADES = ((1.0, "good"), (0.5, "partial"))
    LATENCY_MS, COST_USD, INPUT_TOKENS, OUTPUT_TOKENS = 40.0, 0.0002, 120, 9

    def __init__(self) -> None:
        self.given: dict[str, list[tuple[float, str]]] = {}
        self.lock = threading.Lock()  # judges run on a thread pool

    def __call__(self, prompt: str) -> Any:
        with self.lock:
            given = self.given.setdefault(prompt, [])
            score, label = self.GRADES[len(given) % len(self.GRADES)]
            given.append((score, label))
        return types.SimpleNamespace(
            score=score,
            label=label,
            reason=f"graded {label}",
            latency_ms=self.LATENCY_MS,
            cost=self.COST_USD,
            input_tokens=self.INPUT_TOKENS,
            output_tokens=self.OUTPUT_TOKENS,
        )


def _fake_judge_model(
    namespace: dict[str, Any], patch: pytest.MonkeyPatch, stack: contextlib.ExitStack
) -> None:
    """docs/judges.md's ``call_my_model`` (a :class:`_JudgeModel`) and its ``PROMPT``."""
    namespace["call_my_model"] = _JudgeModel()
    namespace["PROMPT"] = "Question: {question}\nAnswer: {answer}\nGrade the answer."


def _fake_chat_server(
    namespace: dict[str, Any], patch: pytest.MonkeyPatch, stack: contextlib.ExitStack
) -> None:
    """docs/judges.md's ``ChatJudge(base_url="https://api.openai.com/v1", ...)``: the real
    class, its calls sent to a local OpenAI-compatible server (``ChatJudge.server``, a
    :class:`~tests.test_judge_client.FakeOpenAI`), the key ``OPENAI_API_KEY`` set."""
    import agenticlens_frames
    from agenticlens_frames.judge_client import ChatJudge

    from .test_judge_client import FakeOpenAI

    server = FakeOpenAI()
    stack.callback(server.close)

    class LocalChatJudge(ChatJudge):
        def __init__(self, *, base_url: str, **options: Any) -> None:
            type(self).asked_for = base_url
            super().__init__(base_url=server.url, **options)

    LocalChatJudge.server = server  # type: ignore[attr-defined]
    patch.setenv("OPENAI_API_KEY", "sk-docs-test")
    patch.setattr(agenticlens_frames, "ChatJudge", LocalChatJudge)


#: Fakes a ``fakes=`` directive may name: each defines that name (several names may share
#: one fake, which is then applied once).
FAKES: dict[str, Fake] = {
    "MyAgent": _fake_agent,
    "build_agent": _fake_build_agent,
    "attempts": _fake_frames,
    "variants": _fake_frames,
    "cases": _fake_frames,
    "dask.distributed.Client": _fake_dask_scheduler,
    "call_my_model": _fake_judge_model,
    "PROMPT": _fake_judge_model,
    "ChatJudge": _fake_chat_server,
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
    counts = {
        str(page.relative_to(REPO)): sum(b.page == page for b in PYTHON_BLOCKS) for page in PAGES
    }
    assert counts["README.md"] >= 7 and counts["docs/archives.md"] >= 3, counts
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


def test_every_markdown_page_of_the_repository_is_checked() -> None:
    """A page added anywhere (data/README.md, a notebook folder's) is checked too: every
    Markdown file git tracks is one of :data:`PAGES`."""
    import subprocess

    try:
        tracked = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "*.md"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout")
    pages = {str(page.relative_to(REPO)) for page in PAGES}
    assert {"README.md", "data/README.md", "docs/judges.md"} <= pages, pages
    assert set(tracked) <= pages, sorted(set(tracked) - pages)


# ------------------------------------------------------------- YAML and JSON blocks

#: The manifest a variant fragment joins: three python variants that are never called
#: (the check stops before the first call), on the bundled example's suite. A fragment of
#: top-level keys (``comparisons:``) joins the bundled example's manifest instead: the
#: pages' running example, whose recorded run it is analysed on.
MINIMAL_MANIFEST = {
    "name": "docs",
    "version": "1",
    "baseline_variant_id": "baseline",
    "trial_count": 1,
    "minimum_trials": 1,
    "variants": [
        {"id": v, "name": v.title(), "target_kind": "python", "target": "agent.py:answer"}
        for v in ("baseline", "candidate", "other")
    ],
}
_AGENT = "def answer(text):\n    return {'output': str(text)}\n"


@functools.cache
def _example_run() -> Any:
    """The bundled example, loaded once: the run a ``comparisons:`` block is analysed on
    (the tables do not depend on the comparisons settings)."""
    from agenticlens_frames import load_experiment

    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


def _yaml_blocks() -> list[Block]:
    return [b for page in PAGES for b in fenced_blocks(page) if b.info in ("yaml", "yml")]


YAML_BLOCKS = _yaml_blocks()


def yaml_kind(block: Block, document: Any) -> str:
    """What a ``yaml`` block is: its ``yaml=`` directive, else by its keys: ``cases`` a
    suite, ``variants`` and ``baseline_variant_id`` a manifest, a list of ``run:`` steps
    a CI job's (its command lines are checked as such), anything else a fragment of a
    manifest (variants, or top-level keys such as ``comparisons:``)."""
    if block.yaml:
        return block.yaml
    if isinstance(document, dict) and "cases" in document:
        return "suite"
    if isinstance(document, dict) and {"variants", "baseline_variant_id"} <= set(document):
        return "manifest"
    if isinstance(document, list) and all(isinstance(i, dict) and "run" in i for i in document):
        return "ci"
    return "fragment"


def is_variants(document: Any) -> bool:
    """Whether a fragment is a variant (``target_kind``) or a list of them."""
    return isinstance(document, list) or (isinstance(document, dict) and "target_kind" in document)


def as_manifest(block: Block, document: Any) -> dict[str, Any]:
    """A fragment merged into a manifest: a variant (or a list of them) joins
    :data:`MINIMAL_MANIFEST`'s variants, a mapping of other keys sets the bundled
    example's top-level keys (its ``comparisons:`` replaced by the block's)."""
    import yaml

    if is_variants(document):
        variants = document if isinstance(document, list) else [document]
        assert all(isinstance(v, dict) for v in variants), f"{block.where}: not variants"
        manifest = json.loads(json.dumps(MINIMAL_MANIFEST))
        manifest["variants"] += variants
        return manifest
    assert isinstance(document, dict), f"{block.where}: a fragment is a mapping or a list"
    manifest = yaml.safe_load((EXAMPLE / "manifest.yaml").read_text(encoding="utf-8"))
    manifest.update(document)
    return manifest


def documented_module(
    block: Block, patch: pytest.MonkeyPatch, stack: contextlib.ExitStack
) -> types.ModuleType:
    """The file a Python block is (its first line ``# my_project/evals.py``), imported
    under its module name (``my_project.evals``) with the block's fakes, until ``patch``
    is undone."""
    first = block.code.lstrip().partition("\n")[0]
    found = re.fullmatch(r"#\s*([\w/]+)\.py", first.strip())
    assert found, f"{block.where}: a file's block starts with '# path/to/file.py'"
    name = found[1].replace("/", ".")
    module = types.ModuleType(name)
    module.__file__ = str(block.page)
    for fake in dict.fromkeys(FAKES[fake_name] for fake_name in block.fakes):
        fake(module.__dict__, patch, stack)
    parts = name.split(".")
    for depth in range(1, len(parts)):  # its packages, so ``import my_project.evals`` works
        package = types.ModuleType(".".join(parts[:depth]))
        package.__path__ = []
        patch.setitem(sys.modules, package.__name__, package)
    patch.setitem(sys.modules, name, module)
    run_block(block, module.__dict__)
    return module


def _file_blocks(page: Path) -> list[Block]:
    """The Python blocks of ``page`` that are files (``# path/to/file.py`` first)."""
    return [
        b
        for b in PYTHON_BLOCKS
        if b.page == page and re.match(r"#\s*[\w/]+\.py\s*$", b.code.lstrip().split("\n")[0])
    ]


def _registered(page: Path) -> tuple[str, ...]:
    """The evaluators a suite of ``page`` may name: the default registry's and those the
    page's Python files register."""
    from agenticlens_frames.evaluators import EvaluatorRegistry, default_registry

    names = set(default_registry())
    with pytest.MonkeyPatch.context() as patch, contextlib.ExitStack() as stack:
        for block in _file_blocks(page):
            module = documented_module(block, patch, stack)
            for value in vars(module).values():
                if isinstance(value, EvaluatorRegistry):
                    names |= set(value)
    return tuple(sorted(names))


def check_yaml(block: Block, folder: Path) -> str:
    """Read ``block`` with the project's loaders in ``folder`` (a copy of the example);
    returns its kind. Raises the loaders' ``InputError`` for a key they refuse."""
    import yaml

    from agenticlens_frames.formats import load_suite
    from agenticlens_frames.paired.settings import effective_comparisons, evaluator_plan
    from agenticlens_frames.runner.live import run_experiment

    try:
        document = yaml.safe_load(block.code)
    except yaml.YAMLError as error:
        raise AssertionError(f"{block.where}: not YAML: {error}") from None
    kind = yaml_kind(block, document)
    if kind == "ci":
        return kind  # a CI job's steps: their command lines are checked above
    path = folder / f"{block.page.stem}-{block.line}.yaml"
    if kind == "suite":
        path.write_text(block.code, encoding="utf-8")
        load_suite(path, known_evaluators=_registered(block.page))
        return kind
    manifest = document if kind == "manifest" else as_manifest(block, document)
    path.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    if kind == "fragment" and not is_variants(document):
        # top-level keys of the example's manifest: read as a manifest, and its
        # comparisons analysed on the example's run, as analyze() and the CLI do
        from agenticlens_frames.formats import load_manifest
        from agenticlens_frames.paired import paired_analysis

        loaded = load_manifest(path)
        config = effective_comparisons(loaded, None)
        if config is not None:
            run = dataclasses.replace(_example_run(), manifest=loaded)
            paired_analysis(run, config, fingerprint=False)
        return kind
    (folder / "agent.py").write_text(_AGENT, encoding="utf-8")
    # ${NAME} in a header is read at send time: set, as a reader would before running
    environ = dict.fromkeys(re.findall(r"\$\{(\w+)\}", block.code), "docs-test")
    # everything that is checked before the first call, and nothing called
    result = run_experiment(
        path, folder / "suite.yaml", max_attempts=0, progress=False, environ=environ
    )
    config = effective_comparisons(result.run.manifest, None)
    if config is not None:  # the evaluators the analysis will compare on
        evaluator_plan(result.run.manifest, result.run.suite, config)
    return kind


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[b.where for b in YAML_BLOCKS])
def test_yaml_block_is_read_by_the_project(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agenticlens_frames.errors import InputError

    if block.skip:
        pytest.skip(f"{block.where}: {block.skip}")
    # loading a python target appends its folder to sys.path: this test's folder, undone
    monkeypatch.setattr(sys, "path", [*sys.path])
    try:
        check_yaml(block, _with_the_example(tmp_path))
    except InputError as refused:
        import yaml

        document = yaml.safe_load(block.code)
        kind = yaml_kind(block, document)
        if kind == "fragment":  # say where the place the error names comes from
            kind += (
                f", its variants from variants[{len(MINIMAL_MANIFEST['variants'])}] of a "
                "minimal manifest"
                if is_variants(document)
                else ", merged into the bundled example's manifest"
            )
        pytest.fail(
            f"{block.where}: the project refuses this block ({kind}):\n{refused}", pytrace=False
        )


def test_yaml_blocks_are_found_and_every_kind_is_checked() -> None:
    kinds = {}
    import yaml

    for block in YAML_BLOCKS:
        kinds[block.where] = yaml_kind(block, yaml.safe_load(block.code))
    assert len(YAML_BLOCKS) >= 6, kinds
    assert {"suite", "fragment", "ci"} <= set(kinds.values()), kinds


def test_the_yaml_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key the loaders refuse fails the check, in each kind of block and in each part
    a fragment can be: a misspelt manifest, variant, retry, comparisons or suite key, a
    value of the wrong kind, a header variable spelt wrong."""
    from agenticlens_frames.errors import InputError

    monkeypatch.setattr(sys, "path", [*sys.path])  # the targets' folder is appended to it
    folder = _with_the_example(tmp_path)

    def block(page: str, showing: str) -> Block:
        (found,) = [b for b in YAML_BLOCKS if b.where.startswith(page) and showing in b.code]
        return found

    suite = block("docs/judges.md", "cases:")
    hosted = block("docs/live-runs.md", "retry:")
    gates = block("docs/statistics.md", "cluster:")
    passed: set[str] = set()
    for shown, good, bad in (
        (suite, "threshold: 0.5}", "treshold: 0.5}"),
        (suite, "input:", "inputs:"),
        (hosted, "concurrency:", "concurency:"),
        (hosted, "backoff_seconds:", "backoff:"),
        (hosted, "retry_on: [timeout,", "retry_on: [time_out,"),
        (gates, "alpha: 0.05", "alpha: 5"),
        (gates, "cluster:", "clustr:"),
        (gates, "pass_hat_3", "pas_hat_3"),
        (block("docs/live-runs.md", "headers:"), "${AGENT_TOKEN}", "${AGENT_TOKEN"),
    ):
        assert good in shown.code, (shown.where, good)
        if shown.where not in passed:  # as shown it passes: the change below is what fails
            check_yaml(shown, folder)
            passed.add(shown.where)
        broken = Block(shown.page, shown.line, shown.info, shown.code.replace(good, bad, 1))
        with pytest.raises(InputError) as refused:
            check_yaml(broken, folder)
            pytest.fail(f"{shown.where} with {bad!r} for {good!r} passed")
        word = re.sub(r"\W", "", bad.partition(":")[0]) or bad
        assert word in str(refused.value) or bad.strip("${}") in str(refused.value), (
            bad,
            str(refused.value),
        )
    manifest = Block(REPO / "README.md", 1, "yaml", (EXAMPLE / "manifest.yaml").read_text())
    assert check_yaml(manifest, folder) == "manifest"
    with pytest.raises(InputError, match="trial_count"):
        check_yaml(Block(manifest.page, 1, "yaml", manifest.code + "trials: 3\n"), folder)


def test_json_blocks_have_a_reader() -> None:
    """No page shows a ``json`` block yet; one documenting a file (report.json, run.json,
    a journal record) must be read by the project's reader here before it is added."""
    blocks = [b.where for page in PAGES for b in fenced_blocks(page) if b.info == "json"]
    assert not blocks, f"{blocks}: give test_docs_examples a reader for these json blocks"


# ------------------------------------------------------------------ the documented judge


def test_the_documented_judge_grades_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/judges.md's judge, its suite and its command line, run for real: the
    ``my_project/evals.py`` block is imported as that module (its model a fake,
    :class:`_JudgeModel`), the page's suite is graded through the page's
    ``--evaluators`` line on three python agents, and the report holds what the
    documented code returns: the mean of the samples' values, their verdicts, costs,
    tokens and latency summed."""
    from typer.testing import CliRunner

    page = REPO / "docs" / "judges.md"
    (evals,) = _file_blocks(page)
    (suite,) = [b for b in YAML_BLOCKS if b.page == page]
    (line,) = [c for c in command_lines(page) if "--evaluators" in c.text]
    monkeypatch.setattr(sys, "path", [*sys.path])  # the agents' folder is appended to it
    with contextlib.ExitStack() as stack:
        module = documented_module(evals, monkeypatch, stack)
        model = module.call_my_model
        monkeypatch.chdir(tmp_path)
        Path("suite.yaml").write_text(suite.code, encoding="utf-8")
        answers = {"baseline": "Yes, within 30 days.", "short": "Yes.", "other": "No."}
        Path("agent.py").write_text(
            "".join(
                f"def {v}(text):\n    return {{'output': {a!r}}}\n" for v, a in answers.items()
            ),
            encoding="utf-8",
        )
        manifest = {
            **MINIMAL_MANIFEST,
            "variants": [
                {"id": v, "name": v, "target_kind": "python", "target": f"agent.py:{v}"}
                for v in answers
            ],
        }
        Path("manifest.yaml").write_text(json.dumps(manifest), encoding="utf-8")
        (args,) = expand(line)
        result = CliRunner().invoke(app, [*args, "--save", "report.json", "--quiet"])
        assert result.exit_code == 0, (line.where, result.output, result.exception)
    report = json.loads(Path("report.json").read_text(encoding="utf-8"))
    question = "Can I get a refund?"
    for variant in report["variants"]:
        (case,) = variant["trials"][0]["report"]["cases"]
        (score,) = [s for s in case["scores"] if s["evaluator"] == "helpfulness_judge"]
        meta = score["metadata"]
        # a judgement of the wrong shape is a failed attempt: the score is unavailable
        assert meta["judge_status"] == "ok", (evals.where, meta.get("judge_error"))
        answer = answers[variant["variant_id"]]
        # what the fake model gave for this answer's prompt: the page's PROMPT, filled
        prompt = module.PROMPT.format(question=question, answer=answer)
        grades = model.given[prompt]
        assert len(grades) == 3  # samples=3
        values = [value for value, _ in grades]
        labels = [label for _, label in grades]
        assert score["name"] == "helpfulness" and score["metric"] == "helpfulness"
        assert score["value"] == pytest.approx(sum(values) / 3)
        assert score["passed"] is (sum(values) / 3 >= 0.5)
        assert score["evaluator_version"] == "gpt-4o-mini/prompt-3"
        assert meta["judge_sample_values"] == values and meta["judge_verdicts"] == labels
        assert meta["verdict"] == max(set(labels), key=labels.count)
        assert meta["judge_model"] == "gpt-4o-mini"
        assert meta["judge_cost_source"] == "measured"
        assert meta["judge_cost_usd"] == pytest.approx(3 * _JudgeModel.COST_USD)
        assert meta["judge_latency_ms"] == pytest.approx(3 * _JudgeModel.LATENCY_MS)
        assert meta["judge_input_tokens"] == 3 * _JudgeModel.INPUT_TOKENS
        assert meta["judge_output_tokens"] == 3 * _JudgeModel.OUTPUT_TOKENS
        assert "graded" in score["explanation"]
    assert len(model.given) == len(answers)  # one prompt per distinct answer


def test_the_documented_chat_judge_grades_through_a_local_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/judges.md's ready-made ``ChatJudge``, as the page writes it, against a local
    OpenAI-compatible server: three samples of one answer are asked with the page's
    template and model, their verdicts mapped by the page's ``verdicts``, the cost
    estimated from the page's prices."""
    from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef
    from agenticlens_frames.formats.traces import normalize_trace
    from agenticlens_frames.frames import CheckColumns
    from agenticlens_frames.scoring import score_sample

    page = REPO / "docs" / "judges.md"
    (block,) = [b for b in PYTHON_BLOCKS if b.page == page and "ChatJudge(" in b.code]
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    with contextlib.ExitStack() as stack:
        for fake in dict.fromkeys(FAKES[name] for name in block.fakes):
            fake(namespace, monkeypatch, stack)
        run_block(block, namespace)
        judge = type(namespace["grader"])
        assert judge.asked_for == "https://api.openai.com/v1"
        verdicts = ("correct", "Partial", "correct")  # the model's spelling may differ
        for verdict in verdicts:
            judge.server.completion(json.dumps({"verdict": verdict, "reason": "fine"}))
        entry = EvaluatorRef("correctness", 0.5)
        case = CaseSpec(
            id="refund",
            name="Refund",
            index=0,
            input="Can I get a refund?",
            expected_output="Yes, within 30 days.",
            evaluators=(entry,),
        )
        sink = CheckColumns()
        score_sample(case, "Yes.", normalize_trace({}), sink, 0, namespace["registry"])
        requests = judge.server.requests
    columns = sink.columns()
    row = list(columns["evaluator"]).index("correctness")  # after the exact-match check
    meta = json.loads(columns["metadata"][row])
    assert meta["judge_status"] == "ok", meta.get("judge_error")
    # the page's verdicts map: correct 1.0, partial 0.5; the value is the samples' mean
    assert columns["value"][row] == pytest.approx((1.0 + 0.5 + 1.0) / 3)
    assert meta["judge_verdicts"] == ["correct", "partial", "correct"]
    assert meta["judge_cost_source"] == "estimated"
    # FakeOpenAI bills 100 prompt and 7 completion tokens a call; the page's prices
    assert meta["judge_cost_usd"] == pytest.approx(3 * (100 * 0.15 + 7 * 0.60) / 1e6)
    assert len(requests) == 3
    path, headers, body = requests[0]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sk-docs-test"
    assert body["model"] == "gpt-4o-mini"
    (prompt,) = [m["content"] for m in body["messages"] if m["role"] == "user"]
    assert prompt.startswith(
        "Question: Can I get a refund?\nReference: Yes, within 30 days.\nAnswer: Yes.\n"
    )
