#!/usr/bin/env bash
# Installs what tests/test_study_slurm.py needs for its one-node Slurm cluster on localhost:
# Debian's slurmctld, slurmd, slurm-client and munge. Idempotent and quiet; never fails the build:
# without apt or root it says what is missing and goes on (those tests then skip, saying why).
set -uo pipefail
packages="slurmctld slurmd slurm-client munge"
have() { for tool in slurmctld slurmd sbatch munged; do
           command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || return 1; done; }
have && exit 0
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null 2>&1 \
    || echo "install_slurm: could not install $packages; the Slurm tests will skip"
else
  echo "install_slurm: Slurm/munge missing and no apt as root; the Slurm tests will skip" \
       "(as root on Debian: apt-get install $packages)"
fi
exit 0
