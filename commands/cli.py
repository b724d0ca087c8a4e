"""The `kgroup` root command. Subcommands are imported only when used, so `--help` stays fast."""

import importlib
import sys

import click

from kgroup import __version__
from kgroup.commands.options import OUTPUT_FORMATS, CONTEXT_SETTINGS, OneLineUsageError, fail

# click >= 8.2 raises this (a UsageError) for a bare `kgroup`: its help, shown as click shows it
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())

# name -> (module in kgroup.commands, attribute, one-line help shown by `kgroup --help`)
COMMANDS = {
    "decode-offsets": ("decode_offsets", "decode_offsets",
                       "Decode __consumer_offsets / __worker_offsets segment files and dumps."),
    "serve": ("serve", "serve", "Serve Kafka's protocol on one node with the embedded group coordinator."),
    "list": ("list", "list_command", "List consumer groups with their state and type."),
    "describe": ("describe", "describe", "Describe groups: static/dynamic members, assignments, lag (live or from a dump)."),
    "remove-members": ("remove_members", "remove_members", "Remove static (or dynamic) members in one KIP-345 batch."),
    "reset-offsets": ("reset_offsets", "reset_offsets",
                      "Plan (and with --execute commit) new offsets for a group: earliest, latest, a time, a shift."),
    "delete-offsets": ("delete_offsets", "delete_offsets", "Delete a group's committed offsets of topics it no longer reads."),
    "delete": ("delete", "delete", "Delete groups that are Empty (DeleteGroups)."),
    "wait": ("wait", "wait", "Wait until a group reaches a state (for runbooks)."),
    "demo": ("demo", "demo", "Start an embedded broker and real consumers, and show each kgroup command at work."),
    "simulate": ("simulate", "simulate", "Predict rebalances of bounces, upgrades and scaling on the embedded coordinator."),
}


class LazyGroup(click.Group):
    """A group that lists commands from a table and imports a command's module on first use."""

    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        module, attr, _ = entry
        return getattr(importlib.import_module(f"kgroup.commands.{module}"), attr)

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except _NO_ARGS_IS_HELP:
            raise
        except click.UsageError as exc:       # the root's own options
            raise OneLineUsageError(exc) from None

    def invoke(self, ctx):
        """Every usage error of every command (an unknown command, option or choice, a missing
        argument, a rule a command checks itself) as one line, `kgroup COMMAND: message`, exit 2.
        A reader of stdout that goes away (`| head`) ends the output, not the command: exit 0 for
        every command and format, as JSON (`echo_json`) and decode-offsets do, not click's exit 1.
        An interrupt is `kgroup COMMAND: interrupted` and exit 130, as decode-offsets says it."""
        try:
            return super().invoke(ctx)
        except (_NO_ARGS_IS_HELP, OneLineUsageError):
            raise
        except click.UsageError as exc:
            raise OneLineUsageError(exc) from None
        except BrokenPipeError as exc:
            from kgroup.writers import stdout_closed, stdout_reader_gone

            if not stdout_closed():   # a socket's, not stdout's: a failure like any other
                fail(ctx.invoked_subcommand, exc)
            stdout_reader_gone()
            ctx.exit(0)
        except KeyboardInterrupt:   # Ctrl-C: one line and 130 (click would print "Aborted!" and exit 1)
            click.echo(f"kgroup {ctx.invoked_subcommand}: interrupted", err=True)
            ctx.exit(130)

    def format_commands(self, ctx, formatter):
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="kgroup")
@click.option("-o", "--output", "output", type=click.Choice(OUTPUT_FORMATS), default=None,
              help="Output format for every command (default: table, whether or not stdout is a terminal; "
                   "decode-offsets: jsonl when it is not). A command's own -o wins.")
@click.pass_context
def cli(ctx, output):
    """Operations toolkit for Kafka consumer groups with static membership (KIP-345).

    Exit codes: 0 ok, 1 failure, 2 usage, 3 partial (some items failed).
    """
    ctx.ensure_object(dict)
    ctx.obj["output"] = output


def main(argv=None):
    """Console-script entry point."""
    try:
        cli.main(args=argv, prog_name="kgroup", standalone_mode=True)
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        click.echo("interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
