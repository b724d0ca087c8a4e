"""The documentation tells the truth about the commands: every option `--help` shows is in the
command's man page and in its README section, the defaults `--help` states are the real ones, and
the modules docs/architecture.md names exist."""

from __future__ import annotations

import pathlib
import re

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import COMMANDS, cli

ROOT = pathlib.Path(__file__).resolve().parent.parent


def help_text(command: str) -> str:
    result = CliRunner().invoke(cli, [*command.split(), "--help"])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_plain_text_commands_say_their_output_default_is_table(command):
    """serve and demo print text whatever stdout is; their help says so once, not 'table on a
    terminal, table otherwise'."""
    text = " ".join(help_text(command).split())
    assert "Output format: table, json (default: table)." in text
    assert "table otherwise" not in text


def test_live_commands_say_table_whether_or_not_stdout_is_a_terminal():
    text = " ".join(help_text("list").split())
    assert "(default: table)" in text and "json otherwise" not in text


def test_by_duration_takes_seconds_as_its_metavar_says(monkeypatch):
    from kgroup.client.reset import parse_duration_ms

    assert "--by-duration PnDTnHnMnS" in help_text("reset-offsets")
    assert parse_duration_ms("P1DT2H3M4S") == ((24 + 2) * 3600 + 3 * 60 + 4) * 1000


# The page that documents each command (README.md for demo, docs/ for the rest) and its section:
# from its heading to the next heading of the same or a higher level (a command's subsections belong
# to it unless they are another command's).
DOC_SECTIONS = {
    "demo": ("README.md", "## `kgroup demo`"),
    "serve": ("docs/serve.md", "# `kgroup serve`"),
    **{verb: ("docs/live-groups.md", "# Live groups:") for verb in ("list", "describe", "remove-members", "wait",
                                                                   "reset-offsets", "delete-offsets", "delete")},
    "simulate": ("docs/simulate.md", "# `kgroup simulate`"),
    "simulate connect": ("docs/simulate.md", "## `kgroup simulate connect`"),
    "decode-offsets": ("docs/decode-offsets.md", "# `kgroup decode-offsets`"),
}


def readme_section(command: str) -> str:
    page, heading = DOC_SECTIONS[command]
    lines = (ROOT / page).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    level = lines[start].split(" ")[0]
    connect = "## `kgroup simulate connect`"
    end, fenced = len(lines), False
    for i in range(start + 1, len(lines)):
        fenced ^= lines[i].startswith("```")
        mark = lines[i].split(" ")[0]
        if not fenced and (mark and set(mark) == {"#"} and len(mark) <= len(level)
                           or lines[i].startswith(connect) and command == "simulate"):
            end = i
            break
    return "\n".join(lines[start:end])


def code_blocks(markdown: str) -> list[str]:
    """The text of each fenced block but Python ones."""
    blocks, current, language = [], None, ""
    for line in markdown.splitlines():
        if line.startswith("```"):
            if current is None:
                current, language = [], line[3:].strip()
            else:
                if language != "python":
                    blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def options_of(command: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", help_text(command))) - {"--help"}


def mentions(text: str, option: str) -> bool:
    return re.search(re.escape(option) + r"(?![a-z-])", text) is not None


@pytest.mark.parametrize("command", sorted(COMMANDS) + ["simulate connect"])
def test_every_option_of_help_is_in_the_man_page_and_the_readme_section(command):
    options = options_of(command)
    page = (ROOT / "man" / f"kgroup-{command.replace(' ', '-')}.1").read_text().replace("\\-", "-")
    section = readme_section(command)
    assert sorted(o for o in options if not mentions(page, o)) == [], "missing from the man page"
    # -o/--output: README's "Every command has -o/--output" paragraph, and each section's -o values
    assert sorted(o for o in options - {"--output"} if not mentions(section, o)) == [], \
        "missing from the README section"


@pytest.mark.parametrize("command", sorted(COMMANDS) + ["simulate connect"])
def test_the_readme_section_names_no_option_the_command_lacks(command):
    """A `kgroup VERB ... --opt` line in a README code block uses only options VERB has."""
    known = options_of(command)
    section = readme_section(command)
    prefix = f"kgroup {command} "
    for block in code_blocks(section):
        text = re.sub(r"\\\n\s*", " ", block)
        for line in text.splitlines():
            line = line.lstrip("$ ").split("#")[0]
            if not line.startswith(prefix) or (command == "simulate" and line.startswith("kgroup simulate connect")):
                continue
            used = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", line))
            assert used <= known, f"{line!r}: {sorted(used - known)}"


ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def test_the_verb_table_of_architecture_md_names_files_and_modules_that_exist():
    import importlib
    import importlib.util

    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| (.*?) \|", ARCHITECTURE, re.M)
    verbs = {verb.split(" --")[0] for verb, _, _ in rows}
    assert verbs == set(COMMANDS) | {"simulate connect"}, "every verb has its row"
    for verb, command_file, library in rows:
        assert (ROOT / command_file).is_file(), f"{verb}: {command_file}"
        for name in re.findall(r"`([a-z_]+(?:\.[a-z_]+)+)`", library):
            module, _, attribute = f"kgroup.{name}".rpartition(".")
            if importlib.util.find_spec(module) is not None and hasattr(importlib.import_module(module), attribute):
                continue  # a function of a module: client.groups.list_groups
            assert importlib.util.find_spec(f"kgroup.{name}") is not None, f"{verb}: {name}"


@pytest.mark.parametrize("package", ["records", "decode", "coordinator", "assignors", "server", "wire", "client",
                                     "sim"])
def test_the_modules_architecture_md_names_in_each_room_exist(package):
    """Every `name` in a room's paragraph is a module (or subpackage) of that package, or, if it is
    not module-shaped in the package, at least a name its code defines (a function, a parameter)."""
    [room] = [p for p in ARCHITECTURE.split("\n\n") if p.startswith(f"**`kgroup/{package}/`")]
    directory = ROOT / "kgroup" / package
    sources = "\n".join(p.read_text() for p in directory.rglob("*.py"))
    for name in sorted(set(re.findall(r"`([a-z_][a-z0-9_]*)\*?`", room))):
        if name.startswith("__"):  # a topic: __consumer_offsets, __worker_offsets
            continue
        exists = any(directory.rglob(f"{name}.py")) or (directory / name).is_dir()
        assert exists or re.search(rf"\b(def |class )?{name}\b", sources), f"kgroup/{package}: {name}"
    for path in re.findall(r"`((?:assignors|tests|benchmarks)/[\w/]+\.py)`", room):
        assert (ROOT / ("kgroup/" + path if path.startswith("assignors") else path)).is_file(), path


def test_every_acl_operation_serve_accepts_is_documented():
    from kgroup.server.security.acl import OPERATIONS

    page = (ROOT / "man" / "kgroup-serve.1").read_text()
    section = readme_section("serve")
    for operation in OPERATIONS:
        assert f"\\fB{operation}\\fR" in page and f"`{operation}`" in section, operation


def test_every_repository_path_the_docs_cite_exists():
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "man").glob("*.1"))]
    for doc in texts:
        text = doc.read_text().replace("\\-", "-")
        for path in re.findall(r"(?<![\w/])((?:benchmarks|tests|docs|man)/[\w./-]*\w)", text):
            assert (ROOT / path).exists() or (ROOT / "docs" / path).exists(), f"{doc.name}: {path}"


def test_simulate_order_help_names_every_scenario_that_takes_it():
    from kgroup.sim.scenario_options import SCENARIO_OPTIONS

    text = " ".join(help_text("simulate").split())
    order_help = text[text.index("--order ["):text.index("--concurrency")]
    order_help = order_help.replace("- ", "-")  # help's line breaks inside hyphenated names
    for scenario, options in SCENARIO_OPTIONS.items():
        if "order" in options:
            assert scenario in order_help, scenario
