"""--help pages of both command lines: a flag shows no value type (typer 0.29 wrote
``--quiet -q <bool>``, as if the flag took a value)."""

from __future__ import annotations

import re
from pathlib import Path

import typer
from typer.testing import CliRunner

from agenticlens_frames.cli import app


def _command_paths() -> list[list[str]]:
    """Every group and command of the installed tree, walked from click's own view."""
    root = typer.main.get_command(app)
    paths, todo = [], [([], root)]
    while todo:
        path, command = todo.pop()
        paths.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            todo.append(([*path, name], sub))
    return paths


def test_no_help_page_gives_a_flag_a_type() -> None:
    paths = _command_paths()
    # the root, two groups and every command under them, archive included
    assert ["experiment", "run"] in paths and ["archive", "slice"] in paths
    for path in paths:
        page = CliRunner().invoke(app, [*path, "--help"], terminal_width=200).output
        assert "--help" in page, path
        assert "<bool>" not in page and "BOOLEAN" not in page, (path, page)


def test_options_that_take_a_value_keep_their_type_and_flags_still_parse(tmp_path) -> None:
    page = CliRunner().invoke(app, ["experiment", "run", "--help"], terminal_width=200).output

    def row(option: str) -> str:  # the line that starts the option's row
        return next(line for line in page.splitlines() if re.match(rf"│ {option}\b", line))

    alpha = row("--alpha")
    assert re.search(r"<float>|FLOAT", alpha), alpha
    quiet = row("--quiet")
    assert "-q" in quiet and not re.search(r"<\w+>|BOOLEAN", quiet), quiet
    # the flag parses as a flag: -q takes no value (the next argument is the manifest)
    result = CliRunner().invoke(
        app, ["experiment", "run", "-q", str(tmp_path / "m.yaml"), str(tmp_path / "s.yaml")]
    )
    assert result.exit_code == 1 and "m.yaml" in result.output


def test_the_run_help_says_where_judges_are_set_and_what_a_resume_does_to_them() -> None:
    """The help named no judge: --evaluators said only 'an EvaluatorRegistry', so a user
    grading with an LLM judge found neither where its samples and retries are set nor
    that a resume judges unavailable scores again."""
    page = CliRunner().invoke(app, ["experiment", "run", "--help"], terminal_width=200).output
    text = re.sub(r"[│\s]+", " ", page)
    assert "Python evaluators and LLM judges (a judge's samples, retries and version" in text
    assert "docs/judges.md" in text
    assert "unavailable judge scores are then judged again" in text
    assert "judge calls overlap on as many threads" in text


def test_every_option_a_help_page_names_is_an_option_of_that_command() -> None:
    # `experiment report --help` sent readers to --regression-threshold, which only
    # `experiment run` has. A mention of another command's option names that command.
    root = typer.main.get_command(app)
    todo = [([], root)]
    while todo:
        path, command = todo.pop()
        todo += [([*path, name], sub) for name, sub in getattr(command, "commands", {}).items()]
        own = {name for param in command.params for name in (*param.opts, *param.secondary_opts)}
        texts = [command.help or "", command.epilog or ""]
        texts += [getattr(param, "help", None) or "" for param in command.params]
        text = re.sub(r"experiment run --[a-z-]+", "", " ".join(texts))
        named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text))
        assert named <= own, (path, sorted(named - own))


def test_the_readme_synopsis_names_every_option_of_both_experiment_commands() -> None:
    # README's "On the command line" block is where a user looks an option up; four of
    # `experiment run`'s and three of `experiment report`'s were missing from it.
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    synopsis = readme.split("## On the command line", 1)[1].split("```", 2)[1]
    root = typer.main.get_command(app)
    for name in ("run", "report"):
        command = root.commands["experiment"].commands[name]
        for param in command.params:
            longs = [opt for opt in param.opts if opt.startswith("--") and opt != "--help"]
            assert not longs or re.search(rf"{longs[0]}\b", synopsis), (name, longs[0])
