"""Options shared by several commands, defined once."""

import sys

import click

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# Every format any command renders; each command accepts its own subset.
OUTPUT_FORMATS = ["table", "json", "jsonl", "csv", "dump-log"]


def output_option(choices, default_tty="table", default_pipe="json"):
    """`-o/--output` for one command: falls back to the root's -o, then to a terminal-aware default."""

    def callback(ctx, param, value):
        if value is None:
            value = (ctx.find_root().obj or {}).get("output")
        if value is None:
            value = default_tty if sys.stdout.isatty() else default_pipe
        if value not in choices:
            raise click.BadParameter(
                f"{value!r} is not supported here; choose from {', '.join(choices)}",
                ctx=ctx, param=param)
        return value

    return click.option("-o", "--output", "output", type=click.Choice(choices), default=None,
                        callback=callback, is_eager=False,
                        help=f"Output format: {', '.join(choices)} "
                             f"(default: {default_tty} on a terminal, {default_pipe} otherwise).")
