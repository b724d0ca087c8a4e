"""`kgroup serve`: the embedded group coordinator as a single-node Kafka-protocol endpoint."""

import click

from kgroup.commands.options import CONTEXT_SETTINGS, output_option


def _listen(value):
    from kgroup.server.security.listeners import ListenerError, parse_listener

    try:
        return parse_listener(value)
    except ListenerError as exc:
        raise click.BadParameter(str(exc), param_hint="--listen") from None


def _advertised_host(ctx, param, value):
    from kgroup.server.security.listeners import ListenerError, check_advertised_host

    try:
        return None if value is None else check_advertised_host(value)
    except ListenerError as exc:
        raise click.BadParameter(str(exc)) from None


def _user(value):
    from kgroup.server.security.listeners import ListenerError
    from kgroup.server.security.admission import parse_user

    try:
        return parse_user(value, repr(value))
    except ListenerError as exc:
        raise click.BadParameter(str(exc), param_hint="--user") from None


def _credentials(users_file, users):
    """--users FILE first, then each --user (a --user replaces the file's entry of that name)."""
    from kgroup.server.security.admission import read_users_file

    credentials = read_users_file(users_file) if users_file else {}
    credentials.update(_user(value) for value in users)
    return credentials


def _acl(value):
    from kgroup.server.security.acl import AclError, parse_acl

    try:
        return parse_acl(value)
    except AclError as exc:
        raise click.BadParameter(str(exc).removeprefix("--acl "), param_hint="--acl") from None


def _warn_about_principals(rules, credentials):
    """One stderr line per --acl principal that can match no connection (a typo'd user, a type
    other than User): it starts anyway, as Kafka accepts such an ACL."""
    from kgroup.server.security.acl import principal_warnings

    for line in principal_warnings(rules, credentials):
        click.echo(f"kgroup serve: warning: {line}", err=True)


def _topic(value):
    from kgroup.server.handlers.meta import MAX_PARTITIONS
    from kgroup.server.storage.log_dir import TopicError, validate_user_topic

    name, sep, count = value.rpartition(":")
    if not sep or not name or not count.isdigit() or int(count) < 1:
        raise click.BadParameter(f"{value!r}: expected NAME:PARTITIONS with PARTITIONS >= 1, e.g. "
                                 f"{(name or count or 'orders')}:6", param_hint="--topic")
    try:
        validate_user_topic(name)
    except TopicError as exc:
        raise click.BadParameter(f"{value!r}: {exc}", param_hint="--topic") from None
    if int(count) > MAX_PARTITIONS:
        raise click.BadParameter(f"{value!r}: at most {MAX_PARTITIONS} partitions per topic", param_hint="--topic")
    return name, int(count)


def _raise_open_file_limit():
    """Every connection and every segment is an open file: lift the soft limit to the hard one
    (as the JVM does for Kafka), so a few hundred clients do not hit a 1024 default."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ImportError, ValueError, OSError):
        pass


def _event(obj):
    import json

    click.echo(json.dumps(obj))


@click.command("serve", context_settings=CONTEXT_SETTINGS)
@output_option(["table", "json"])
@click.option("--listen", "listens", multiple=True, metavar="[PROTOCOL://]HOST:PORT",
              help="A listener (repeatable): PLAINTEXT (the default protocol), SSL, SASL_PLAINTEXT "
                   "or SASL_SSL; port 0 picks a free port.  [default: 127.0.0.1:9092]")
@click.option("--log-dir", "log_dir", required=True, type=click.Path(file_okay=False),
              help="Directory holding the topic partitions (created if missing).")
@click.option("--topic", "topics", multiple=True, metavar="NAME:PARTITIONS",
              help="Create this topic at start-up if it does not exist (repeatable).")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="A Kafka broker setting: group.*, offsets.*, offset.metadata.max.bytes, "
                   "num.partitions, auto.create.topics.enable, socket.request.max.bytes, "
                   "message.max.bytes, log.segment.bytes, connection.failed.authentication.delay.ms, "
                   "... (repeatable; an unknown key or "
                   "bad value exits 2).")
@click.option("--user", "users", multiple=True, metavar="NAME:PASSWORD",
              help="A SASL user (repeatable); only salted credentials are kept.")
@click.option("--users", "users_file", default=None, metavar="FILE",
              help="SASL users from FILE, one NAME:PASSWORD a line (# comments, blank lines "
                   "skipped); a bad line exits 2 naming FILE:LINE.")
@click.option("--acl", "acls", multiple=True, metavar="PRINCIPAL:OPERATION:RESOURCE_TYPE:NAME",
              help="Allow PRINCIPAL (User:NAME, User:ANONYMOUS without SASL, User:*; matched "
                   "exactly, case included, as Kafka matches it) OPERATION (Read, Write, Create, "
                   "Delete, Alter, Describe, IdempotentWrite, All, ...) on RESOURCE_TYPE (Topic, "
                   "Group, Cluster, TransactionalId) NAME (case-sensitive; * any, a trailing * a "
                   "prefix); repeatable. With none, everything is allowed; with any, what no --acl "
                   "allows is denied, and each denial is logged on stderr as Kafka's authorizer "
                   "logs it. A principal naming no --user is warned about.")
@click.option("--advertised-host", default=None, metavar="HOST", callback=_advertised_host,
              help="Host name clients are told to connect to (default: the bound address; for a "
                   "listener on every interface, 0.0.0.0 or ::, the machine's host name, said on "
                   "stderr). A wildcard address is refused, as Kafka refuses it.")
@click.option("-v", "--verbose", count=True,
              help="Log to stderr: -v connections, -vv every request and response and every "
                   "--acl decision allowed (problems and --acl denials are always logged).")
def serve(output, listens, log_dir, topics, configs, users, users_file, acls, advertised_host, verbose):
    """Serve Kafka's protocol on one node: topics, Produce/Fetch and the group coordinator.

    The first lines on stdout are `listening on HOST:PORT`, one per listener (with -o json, one
    JSON object a line: {"event": "listening", "host", "port", "bootstrap", "log_dir", "protocol"}
    per listener first, {"event": "stopped"} at a clean stop). SIGTERM or SIGINT stops the server cleanly. Offset commits, group changes and
    produced batches are fsynced before they are acknowledged. See man kgroup-serve.
    """
    import asyncio
    import logging
    import os
    import sys

    from kgroup.errors import KgroupError
    from kgroup.server.broker import Broker, serve_until_signalled
    from kgroup.server.config import ServerConfig

    listeners = [_listen(value) for value in listens or ("127.0.0.1:9092",)]
    try:
        credentials = _credentials(users_file, users)
    except KgroupError as exc:
        click.echo(f"kgroup serve: {exc}", err=True)
        sys.exit(exc.exit_code)
    rules = [_acl(value) for value in acls]
    topic_list = [_topic(t) for t in topics]
    _warn_about_principals(rules, credentials)
    _raise_open_file_limit()
    logging.basicConfig(level=logging.WARNING if verbose == 0 else logging.INFO if verbose == 1
                        else logging.DEBUG, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from kgroup.server.security.audit import log as authorizer_log

    # Kafka's log4j config keeps kafka.authorizer.logger at INFO: denials always, allows with -vv
    authorizer_log.setLevel(logging.DEBUG if verbose >= 2 else logging.INFO)
    try:
        config = ServerConfig.from_pairs(configs)
        broker = Broker(log_dir, config, topics=topic_list, advertised_host=advertised_host,
                        listeners=listeners, users=credentials, acls=rules)

        def ready(_first):
            from kgroup.server.security.listeners import is_wildcard

            for listener, address in broker.bound:
                shown = f"[{address[0]}]" if ":" in address[0] else address[0]  # IPv6: [::1]:PORT
                if is_wildcard(listener.host) and advertised_host is None:
                    bound = f"[{listener.host}]" if ":" in listener.host else listener.host
                    click.echo(f"kgroup serve: listening on {bound}:{address[1]}, advertising host {address[0]} "
                               f"(set --advertised-host to change)", err=True)
                if output == "json":
                    _event({"event": "listening", "host": address[0], "port": address[1],
                            "bootstrap": f"{shown}:{address[1]}",
                            "log_dir": os.path.abspath(log_dir), "protocol": listener.protocol})
                else:
                    click.echo(f"listening on {shown}:{address[1]}")
            sys.stdout.flush()

        asyncio.run(serve_until_signalled(broker, on_ready=ready))
        if output == "json":
            _event({"event": "stopped"})
    except KgroupError as exc:
        click.echo(f"kgroup serve: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (OSError, ValueError) as exc:
        click.echo(f"kgroup serve: {exc}", err=True)
        sys.exit(1)
