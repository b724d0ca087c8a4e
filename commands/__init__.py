"""kgroup's click commands: parse, call the kgroup library, render. Installed as kgroup.commands."""
