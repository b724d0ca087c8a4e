"""--out: a new directory for the output, and the one file an output rendered in this process goes to."""

from __future__ import annotations

import contextlib
import os

from kgroup.errors import KgroupError, KgroupUsageError

#: File extension of each text format under --out.
EXTENSIONS = {"jsonl": "jsonl", "json": "json", "csv": "csv", "table": "txt", "dump-log": "txt"}


def prepare_out_dir(out: str) -> None:
    """A local --out must not exist yet or be empty (Spark refuses to write into an existing one)."""
    if "://" in out and not out.startswith("file://"):
        return  # hdfs://, s3a://, ...: Spark itself checks
    path = out.removeprefix("file://")
    if os.path.isdir(path):
        if os.listdir(path):
            raise KgroupUsageError(f"--out {out}: directory exists and is not empty; give a new directory")
        os.rmdir(path)  # Spark creates it, and refuses an existing one
    elif os.path.exists(path):
        raise KgroupError(f"--out {out}: exists and is not a directory")


def remove_out_dir(out: str) -> None:
    """Remove what a run that did not finish wrote under a local --out: the whole directory, which
    `prepare_out_dir` found new or empty, so it holds only this run's files (part files, Spark's
    ``_temporary``, hidden partial files). A Hadoop URL is left to Spark's committer, which removes
    its temporary files when a job is aborted."""
    if "://" in out and not out.startswith("file://"):
        return
    import shutil

    shutil.rmtree(out.removeprefix("file://"), ignore_errors=True)


def output_file(directory: str, view: str, output: str) -> str:
    """The one file an output rendered in this process goes to under --out."""
    name = "state" if view == "state" else "part-00000"
    return os.path.join(directory, f"{name}.{EXTENSIONS[output]}")


@contextlib.contextmanager
def open_output_file(directory: str, view: str, output: str):
    """Create ``directory`` if needed and open its one output file for the ``with`` block; a path that
    cannot be written is one line naming it (a KgroupError), not a traceback.

    The text goes to a hidden file renamed into place when the block ends (as the Spark engine's part
    files are): a run cut short by an exception (an interrupt, a full disk, an unreadable input)
    leaves no partial file under the final name, and the directory it made is removed again. A run
    that ends with its own exit status (a --strict stop, problems in the dump) keeps what it wrote,
    as stdout would have shown it."""
    final = output_file(directory, view, output)
    partial = os.path.join(directory, f".{os.path.basename(final)}.inprogress")
    try:
        os.makedirs(directory, exist_ok=True)
        stream = open(partial, "w", encoding="utf-8")
    except OSError as exc:
        raise KgroupError(f"--out {directory}: {exc.strerror or exc}") from None
    try:
        with stream:
            yield stream
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(partial)
            os.rmdir(directory)  # only when it is empty again
        raise
    os.replace(partial, final)
