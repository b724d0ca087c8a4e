"""Result rows as the live commands print them (`kgroup.commands.output.render_rows`)."""

from __future__ import annotations

import json

from kgroup.commands.output import render_rows

ROWS = [{"group": "g1", "state": None, "deleted": True, "error": None},
        {"group": "g2", "state": "Stable", "deleted": False, "error": "NON_EMPTY_GROUP"}]
COLUMNS = ["group", "state", "deleted", "error"]


def test_table_says_yes_and_no_for_booleans_and_dash_for_none(capsys):
    render_rows(ROWS, COLUMNS, "table")
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines == [["GROUP", "STATE", "DELETED", "ERROR"], ["g1", "-", "yes", "-"],
                     ["g2", "Stable", "no", "NON_EMPTY_GROUP"]]


def test_json_and_csv_keep_their_types(capsys):
    render_rows(ROWS, COLUMNS, "json")
    assert json.loads(capsys.readouterr().out) == ROWS
    render_rows(ROWS, COLUMNS, "csv")
    assert capsys.readouterr().out.splitlines() == ["group,state,deleted,error", "g1,,true,",
                                                    "g2,Stable,false,NON_EMPTY_GROUP"]
