"""What `kgroup simulate` shares between its one-run table and its --runs spreads: not verbs of their own
(the verb is commands/simulate.py, its man page kgroup-simulate.1)."""
