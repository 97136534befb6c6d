"""The target's GitHub Actions workflows, interpreted: which suites they run and how.

runs.py reads which suites each workflow runs (`--hw`, `--nightly`/`--cadence`), with the job
timeouts and shard counts, and the consumers' workflows; jobs.py the job that runs a suite
(matrices, reusable workflows, the steps' scripts); expressions.py evaluates `${{ ... }}` as a
manual dispatch would; images.py resolves the job's container image. It reads the configuration
(checks/config/) and knows nothing of the runner's contract; checks/target/ combines the two into
how each suite runs (suite_runs.py) and the run plans.
"""
