"""Errors the library raises for the CLI to turn into one clear line and an exit code."""

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3


class KgroupError(Exception):
    """A problem the user can act on; the message is shown as-is, without a traceback."""

    exit_code = EXIT_FAILURE


class KgroupUsageError(KgroupError):
    """A malformed or missing argument found past option parsing (an address, a file): exit 2."""

    exit_code = EXIT_USAGE
