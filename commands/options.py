"""Options shared by several commands, defined once."""

import contextlib
import sys

import click

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# Every format any command renders; each command accepts its own subset.
OUTPUT_FORMATS = ["table", "json", "jsonl", "csv", "dump-log"]


def output_option(choices, default_pipe="table"):
    """`-o/--output` for one command: falls back to the root's -o, then to the default. The same table
    whether or not stdout is a terminal (`kgroup describe g | grep node-0` greps what the terminal shows;
    a script says `-o json`); only decode-offsets, whose records are a stream, prints jsonl to a pipe."""

    def callback(ctx, param, value):
        if value is None:
            value = (ctx.find_root().obj or {}).get("output")
        if value is None:
            value = "table" if sys.stdout.isatty() else default_pipe
        if value not in choices:
            raise click.BadParameter(
                f"{value!r} is not supported here; choose from {', '.join(choices)}",
                ctx=ctx, param=param)
        return value

    default = "table" if default_pipe == "table" else f"table on a terminal, {default_pipe} otherwise"
    return click.option("-o", "--output", "output", type=click.Choice(choices), default=None,
                        callback=callback, is_eager=False,
                        help=f"Output format: {', '.join(choices)} (default: {default}).")


class Seconds(click.FloatRange):
    """A duration in seconds with a lower bound: FloatRange, and finite (`nan` and `inf` parse as
    floats and pass its bound check, then fail deep in a socket or a sleep)."""

    def convert(self, value, param, ctx):
        import math

        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds", param, ctx)
        return seconds


class GroupState(click.ParamType):
    """--state of `list` and `wait`: a group state in any case, converted to Kafka's spelling. An
    unknown one is the same usage error for both, listing the states (kgroup.client.groups.GROUP_STATES)."""

    name = "state"

    def convert(self, value, param, ctx):
        from kgroup.client.groups import GROUP_STATES

        for state in GROUP_STATES:
            if state.lower() == value.lower():
                return state
        self.fail(f"{value!r} is not a group state; choose from {', '.join(GROUP_STATES)}", param, ctx)


class ClusterOptions:
    """The shared connection options of the live commands, opened lazily into a ClusterClient."""

    def __init__(self, bootstrap, command_config, timeout, command: str = ""):
        self.bootstrap = bootstrap
        self.command_config = command_config
        self.timeout = timeout
        self.command = command      # for the warnings: `kgroup COMMAND: ignoring client property ...`
        self._settings = None

    def settings(self) -> dict:
        """--command-config read once (a command that reconnects does not warn again): each key kgroup
        does not use is one warning line on stderr, as Kafka's tools log a config they do not know,
        with the known key it is a near miss of."""
        from kgroup.client.properties import load_properties

        def ignoring(key, suggestion):
            hint = f"; did you mean {suggestion}?" if suggestion else ""
            click.echo(f"kgroup {self.command}: ignoring client property {key!r} (not used by kgroup{hint})",
                       err=True)

        if self._settings is None:
            self._settings = load_properties(self.command_config, ignoring) if self.command_config else {}
        return self._settings

    def connect(self, refused_at_once: bool = True):
        """`refused_at_once=False` for commands that wait out a restarting broker (`wait`)."""
        from kgroup.wire.cluster import ClusterClient

        return ClusterClient(self.bootstrap, self.settings(), timeout_s=self.timeout, refused_at_once=refused_at_once)


def cluster_options(fn):
    """--bootstrap-server (env KGROUP_BOOTSTRAP_SERVER), --command-config, --timeout -> `cluster` argument."""
    import functools

    @click.option("--bootstrap-server", "bootstrap", envvar="KGROUP_BOOTSTRAP_SERVER", metavar="HOST:PORT[,...]",
                  help="Broker(s) to bootstrap from (env KGROUP_BOOTSTRAP_SERVER).")
    @click.option("--command-config", "command_config", type=click.Path(dir_okay=False), metavar="FILE",
                  help="Kafka client properties (security.protocol, sasl.*, ssl.* with PEM files, client.id); "
                       "a property kgroup does not use is a warning (with 'did you mean' for a near miss), and "
                       "skipped; a file that must be fixed (a value kgroup cannot honour, a missing mechanism, "
                       "user name or password, a certificate file that is not there) is exit 2 before connecting.")
    @click.option("--timeout", "timeout", type=Seconds(min=0.1), default=30.0, show_default=True,
                  metavar="SECONDS", help="Timeout for connecting and for each request.")
    @functools.wraps(fn)
    def wrapper(*args, bootstrap, command_config, timeout, **kwargs):
        command = click.get_current_context().info_name
        return fn(*args, cluster=ClusterOptions(bootstrap, command_config, timeout, command), **kwargs)

    return wrapper


def refuse_cluster_with_dump(dumps) -> None:
    """--from-dump reads files offline: --bootstrap-server or --command-config given with it on the
    command line is a usage error, not silently ignored (KGROUP_BOOTSTRAP_SERVER is only a default)."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    given = [name for param, name in (("bootstrap", "--bootstrap-server"), ("command_config", "--command-config"))
             if ctx.get_parameter_source(param) is ParameterSource.COMMANDLINE]
    if dumps and given:
        raise click.UsageError(f"--from-dump reads a dump offline; {given[0]} is for a live cluster: give one or "
                               f"the other")


def until_time_ms(ctx, param, value):
    """--until-time as epoch milliseconds, parsed once here; a bad value is a usage error."""
    from kgroup.decode.inputs import OptionError, parse_until_time

    try:
        return parse_until_time(value)
    except OptionError as exc:
        raise click.BadParameter(str(exc)) from None


class OneLineUsageError(click.UsageError):
    """click's usage error shown as every verb shows its errors: one line, `kgroup COMMAND: message`,
    exit 2, instead of click's usage block, help hint and `Error:` line (a script reads one line)."""

    def __init__(self, error: click.UsageError):
        super().__init__(error.format_message(), error.ctx)

    def show(self, file=None):
        names, ctx = [], self.ctx
        while ctx is not None and ctx.parent is not None:     # the root is kgroup, whatever it was invoked as
            names.append(ctx.info_name)
            ctx = ctx.parent
        path = " ".join(["kgroup", *reversed(names)])
        # one line even where click lays a message out on several (a missing choice lists them)
        click.echo(f"{path}: {' '.join(self.format_message().split())}", err=True)


class DumpWarnings:
    """What replaying a dump for `--from-dump` found wrong (a bad CRC, an undecodable record): each a
    `kgroup COMMAND: warning:` line once the replay has read the dump, and exit 3 at the end (some records could not be
    used, the rest were), as decode-offsets has it."""

    def __init__(self, command: str):
        self.command = command
        self.count = 0

    def __call__(self, problem) -> None:
        self.count += 1
        click.echo(f"kgroup {self.command}: warning: {problem}", err=True)

    def exit_if_any(self) -> None:
        if self.count:
            raise SystemExit(3)


def fail(command: str, exc) -> None:
    """One line on stderr, `kgroup COMMAND: message`, and the error's exit code (1 for a message)."""
    click.echo(f"kgroup {command}: {exc}", err=True)
    sys.exit(getattr(exc, "exit_code", 1))


@contextlib.contextmanager
def plot_errors(command: str):
    """--plot's failures (no matplotlib, a file type or path it cannot write) as one line, exit 1."""
    from kgroup.sim.plot import PlotUnavailable

    try:
        yield
    except PlotUnavailable as exc:
        fail(command, exc)


def topic_selector_option(help_text: str, required: bool = False):
    """`--topic T[:P,P]` (repeatable), parsed once into [(topic, partitions or None)]."""

    def callback(ctx, param, values):
        from kgroup.client.reset import parse_topic_selector
        from kgroup.errors import KgroupUsageError

        try:
            return [parse_topic_selector(v) for v in values]
        except KgroupUsageError as exc:
            raise click.BadParameter(str(exc)) from None

    return click.option("--topic", "topics", multiple=True, required=required, metavar="TOPIC[:P,P...]",
                        callback=callback, help=help_text)


def exit_for_failures(failed: int, total: int) -> None:
    """Exit 3 when some items failed, 1 when all did (nothing done), as every verb does."""
    if failed:
        raise SystemExit(1 if failed == total else 3)
