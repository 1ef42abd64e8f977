#!/usr/bin/env bash
# A one-node SLURM cluster on 127.0.0.1 for the cluster test (tests/cluster/test_slurm.py).
# Recipe and its traps: docs/scaling.md, "A local SLURM for tests" (no systemd; DefMemPerCPU; the
# executor plugin's sacct status checks hang without slurmdbd, so the test passes
# `--slurm-status-command squeue` and reads the job-completion log instead of sacct).
#
#   .ci/slurm-cluster.sh install   apt packages (slurmctld slurmd slurm-client munge); exit 3
#                                  when they cannot be installed (not root, no apt, offline)
#   .ci/slurm-cluster.sh start     write slurm.conf, start munged, slurmctld, slurmd (PIDs
#                                  recorded in $STATE/pids), wait until the node is idle
#   .ci/slurm-cluster.sh stop      stop every daemon it started, by PID, in reverse order, and
#                                  remove the slurm.conf it wrote (a left-over slurm.conf naming
#                                  a stopped controller makes every later `snakemake` call wait
#                                  10-20 s: the executor plugin probes `scontrol show config`
#                                  when Snakemake builds its command line; docs/scaling.md)
#   .ci/slurm-cluster.sh status
#
# STATE (default /run/dpreg-slurm) holds the PID list; the job-completion log is
# $STATE/jobcomp.log (one line per finished job).
set -euo pipefail
STATE=${DPREG_SLURM_STATE:-/run/dpreg-slurm}
PIDS="$STATE/pids"
PARTITION=${DPREG_SLURM_PARTITION:-dpreg}
# The slurm.conf this script writes names this cluster; `stop` removes only such a file.
CLUSTER_LINE="ClusterName=dpregci"
ours() { [ -f /etc/slurm/slurm.conf ] && grep -qx "$CLUSTER_LINE" /etc/slurm/slurm.conf; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "slurm-cluster: needs root (apt, daemons)" >&2
    exit 3
  fi
}

install() {
  need_root
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
    && command -v sbatch >/dev/null && command -v munged >/dev/null; then
    echo "slurm-cluster: packages already installed"
    return 0
  fi
  command -v apt-get >/dev/null || { echo "slurm-cluster: no apt-get" >&2; exit 3; }
  export DEBIAN_FRONTEND=noninteractive
  local pkgs="slurmctld slurmd slurm-client munge"
  if ! timeout 300 apt-get install -y --no-install-recommends $pkgs; then
    timeout 300 apt-get update || { echo "slurm-cluster: apt-get update failed" >&2; exit 3; }
    timeout 300 apt-get install -y --no-install-recommends $pkgs \
      || { echo "slurm-cluster: apt-get install failed" >&2; exit 3; }
  fi
}

wait_for() { # wait_for <seconds> <command...>
  local tries=$(($1 * 4))
  shift
  for _ in $(seq "$tries"); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  echo "slurm-cluster: timed out waiting for: $*" >&2
  return 1
}

write_conf() {
  local host mem
  host=$(hostname -s)
  getent hosts "$host" >/dev/null || echo "127.0.0.1 $host" >>/etc/hosts
  mem=$(free -m | awk '/^Mem:/{print $2}')
  mkdir -p /etc/slurm
  if [ -e /etc/slurm/slurm.conf ] && ! ours; then
    echo "slurm-cluster: /etc/slurm/slurm.conf exists and is not ours; not overwriting it" >&2
    exit 3
  fi
  # DefMemPerCPU: without it a job that asks for no memory takes the whole node.
  cat >/etc/slurm/slurm.conf <<EOF
# written by dpreg .ci/slurm-cluster.sh start; removed by its stop
${CLUSTER_LINE}
SlurmctldHost=${host}
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=${STATE}/ctld
SlurmdSpoolDir=${STATE}/d
SlurmctldPidFile=${STATE}/slurmctld.pid
SlurmdPidFile=${STATE}/slurmd.pid
SlurmctldLogFile=${STATE}/slurmctld.log
SlurmdLogFile=${STATE}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
MpiDefault=none
ReturnToService=2
MinJobAge=300
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=${STATE}/jobcomp.log
NodeName=${host} CPUs=$(nproc) RealMemory=$((mem - 1024)) State=UNKNOWN
PartitionName=${PARTITION} Nodes=${host} Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  need_root
  if [ -s "$PIDS" ]; then
    echo "slurm-cluster: already started ($PIDS); stop it first" >&2
    exit 1
  fi
  mkdir -p "$STATE/ctld" "$STATE/d" /run/munge
  write_conf
  chown slurm:slurm "$STATE" "$STATE/ctld"
  chown munge:munge /run/munge
  : >"$PIDS"
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --force
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
  fi
  if [ ! -s /run/munge/munged.pid ] || ! kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; then
    su -s /bin/sh munge -c /usr/sbin/munged
    wait_for 10 test -s /run/munge/munged.pid
    echo "munged $(cat /run/munge/munged.pid)" >>"$PIDS"
  fi
  wait_for 10 sh -c 'munge -n | unmunge'
  /usr/sbin/slurmctld
  wait_for 10 test -s "$STATE/slurmctld.pid"
  echo "slurmctld $(cat "$STATE/slurmctld.pid")" >>"$PIDS"
  /usr/sbin/slurmd
  wait_for 10 test -s "$STATE/slurmd.pid"
  echo "slurmd $(cat "$STATE/slurmd.pid")" >>"$PIDS"
  wait_for 30 sh -c 'sinfo -h -o %t | grep -qx idle'
  sinfo
}

remove_conf() {
  if ours; then
    rm -f /etc/slurm/slurm.conf
    echo "slurm-cluster: removed /etc/slurm/slurm.conf"
  fi
}

stop() {
  [ -f "$PIDS" ] || { remove_conf; return 0; }
  tac "$PIDS" | while read -r name pid; do
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "slurm-cluster: $name ($pid) did not stop; SIGKILL" >&2
      kill -9 "$pid"
    fi
    echo "slurm-cluster: stopped $name ($pid)"
  done
  rm -f "$PIDS"
  remove_conf
}

status() {
  [ -f "$PIDS" ] || { echo "slurm-cluster: not started"; return 0; }
  while read -r name pid; do
    printf '%s %s %s\n' "$name" "$pid" "$(kill -0 "$pid" 2>/dev/null && echo up || echo down)"
  done <"$PIDS"
}

"${1:?usage: slurm-cluster.sh install|start|stop|status}"
