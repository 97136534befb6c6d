#!/usr/bin/env bash
# `make test`: every test, in two pytest runs side by side.
#
#   bulk      everything not marked `serial`, on pytest-xdist (WORKERS processes, work-stealing),
#             at the lowest CPU priority this machine allows;
#   deadline  the `serial` tests (tests/conftest.py: they assert on wall time, a deadline the
#             service promises), one at a time, at normal priority.
#
# The deadline tests mostly wait (outages, grace periods, slow clients) and, when they compute,
# must have the cores as if alone. So the bulk runs in a CPU cgroup of small weight (cgroup v1
# cpu.shares or v2 cpu.weight, about 1/16 of a normal process group): it takes what the deadline
# tests leave, which is most of the machine most of the time. Where no cgroup can be made (not
# root, no writable cpu controller) the two run one after the other, as before: slower, same tests.
#
# Usage: tests/run.sh WORKERS [pytest arguments...]; the exit status is the worse of the two runs.
set -uo pipefail
cd "$(dirname "$0")/.."
workers=$1
shift
python=.venv/bin/python

# Bytecode: written under .venv/pycache even where the environment sets PYTHONDONTWRITEBYTECODE.
# Without it every pytest process rewrites the assertions of all test modules and every
# subprocess (services, analysis children, command lines) compiles the package from source.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$PWD/.venv/pycache"

deadline_log=.venv/deadline-tests.log
cgroup=""
make_cgroup() {
  local name="ci-registrar-tests-$$"
  if [ -f /sys/fs/cgroup/cpu/cpu.shares ] && [ -w /sys/fs/cgroup/cpu ]; then  # v1
    mkdir "/sys/fs/cgroup/cpu/$name" 2>/dev/null && echo 64 >"/sys/fs/cgroup/cpu/$name/cpu.shares" 2>/dev/null &&
      cgroup="/sys/fs/cgroup/cpu/$name"
  elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null && [ -w /sys/fs/cgroup ]; then  # v2
    mkdir "/sys/fs/cgroup/$name" 2>/dev/null && echo 6 >"/sys/fs/cgroup/$name/cpu.weight" 2>/dev/null &&
      cgroup="/sys/fs/cgroup/$name"
  fi
  if [ -z "$cgroup" ]; then rmdir "/sys/fs/cgroup/cpu/$name" "/sys/fs/cgroup/$name" 2>/dev/null; fi
  return 0
}
drop_cgroup() {
  [ -n "$cgroup" ] || return 0
  # A process a test left behind would keep the cgroup: hand it back to the parent group.
  while read -r pid; do echo "$pid" >"$(dirname "$cgroup")/cgroup.procs" 2>/dev/null; done <"$cgroup/cgroup.procs"
  rmdir "$cgroup" 2>/dev/null
  return 0
}

bulk() { "$python" -m pytest -n "$workers" --dist worksteal -m "not serial" "$@"; }
deadline() {
  "$python" -m pytest -m serial "$@"
  local s=$?
  [ $s -eq 5 ] && s=0  # no test selected (a -k or a path outside them)
  return $s
}

make_cgroup
if [ -z "$cgroup" ]; then
  echo "(no CPU cgroup here: the deadline tests run after the others)"
  bulk "$@"; status=$?
  deadline "$@" || { s=$?; [ $s -gt $status ] && status=$s; }
  exit $status
fi

trap 'kill 0 2>/dev/null; drop_cgroup' INT TERM
trap drop_cgroup EXIT
deadline "$@" >"$deadline_log" 2>&1 &
deadline_pid=$!
( echo "$BASHPID" >"$cgroup/cgroup.procs" && bulk "$@" )
status=$?
wait "$deadline_pid"
s=$?
[ $s -gt $status ] && status=$s
echo
echo "== the deadline tests (-m serial), run beside the others at normal CPU priority =="
cat "$deadline_log"
exit $status
