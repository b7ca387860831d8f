"""The `ragx` command (typer): one module per command (`*_cmd.py`), the app and its shared options in
app.py, main.py the entry point that maps errors to exit codes. Parsing and printing only: the work
happens in ragx.api (and eval's report and gate for `ragx eval`)."""
