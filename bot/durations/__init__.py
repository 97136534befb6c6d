"""Stored durations: the App's one owner of them, below the worker and on-demand, above the store.

The command line (`ci-registrar durations`, `check`, `calibrate`), the web's /durations page, the
worker (the workflow_run ingest, the PR check, calibration pull requests) and on-demand (a finished
run's logs) all read and write durations here, each through the module of its role:

- file_format: the JSON and CSV columns `durations export` writes and `durations import` reads,
  the import's schema, and one stored measurement as a record of that format;
- file_reader: the one reader of a `--durations-file` (`check`, `calibrate`): either shape a
  command writes;
- ingest: job logs, JSON and CSV into the measurements store, one transaction each, idempotently;
- query: the statistics, a file's history and the rows a check judges est_time against;
- export: every stored measurement, in the format `durations import` reads;
- claims: which repositories may claim a workflow's durations (tenants stay apart).

The SQL lives with its table (bot/store/measurements.py); parsing the runner's log lines and the
calibration maths are the library's (checks/calibration/job_log.py, estimates.py), which the
command line's `check` also runs without the App. Nothing here imports the package itself:
`ci-registrar check --durations-file` reads a file without loading the store.
"""
