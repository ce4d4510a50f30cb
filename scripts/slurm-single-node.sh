#!/usr/bin/env bash
# Starts a single-node SLURM cluster on this machine for the SLURM tests (Debian/Ubuntu, as root):
# installs slurm-wlm and munge if missing, writes a munge key and a slurm.conf naming this host
# with all its cores, and starts munged, slurmctld and slurmd unless they already run.
# No cgroups (proctrack/linuxproc, task/none): it also works in containers without systemd.
# Idempotent; exits non-zero (with the reason) when SLURM cannot run here.
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
    echo "slurm-single-node: needs root (installs packages, starts daemons)" >&2
    exit 1
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q slurm-wlm munge >/dev/null
fi

host=$(hostname)
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key
chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/spool/slurmd /var/spool/slurmctld /var/log
chown munge:munge /run/munge
if ! pgrep -x munged >/dev/null; then
    runuser -u munge -- /usr/sbin/munged
fi

conf=/etc/slurm/slurm.conf
mkdir -p /etc/slurm
if [ ! -f "$conf" ] || ! grep -q "^NodeName=$host " "$conf"; then
    cpus=$(nproc)
    memory=$(awk '/MemTotal/ { print int($2 / 1024) - 512 }' /proc/meminfo)
    cat >"$conf" <<CONF
ClusterName=bbrl-test
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
SchedulerType=sched/backfill
ReturnToService=2
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmUser=root
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SlurmctldLogFile=/var/log/slurmctld.log
SlurmdLogFile=/var/log/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
fi
pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld
pgrep -x slurmd >/dev/null || /usr/sbin/slurmd
for _ in $(seq 1 30); do
    if sinfo -h -o "%t" 2>/dev/null | grep -Eq "idle|mix|alloc"; then
        echo "slurm-single-node: SLURM is up on $host"
        exit 0
    fi
    sleep 1
done
echo "slurm-single-node: SLURM did not come up; see /var/log/slurmctld.log and /var/log/slurmd.log" >&2
sinfo >&2 || true
exit 1
