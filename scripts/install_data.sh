#!/usr/bin/env bash
# Installs the offline data sets the project uses (README: Fashion-MNIST, Jane Austen). Idempotent.
#   Fashion-MNIST: Debian package dataset-fashion-mnist -> /usr/share/datasets/fashion-mnist/
#   Jane Austen:   Debian package r-cran-janeaustenr, unpacked (not installed: it would pull R)
#                  into $1/janeaustenr/
# Without root or apt, it says what is missing and goes on: tests that need the data skip.
set -uo pipefail
dest=${1:-.data}
mkdir -p "$dest"
fmnist=/usr/share/datasets/fashion-mnist
austen="$dest/janeaustenr/data/Rdata.rdb"

have_apt() { command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; }
updated=0
apt_update() { [ $updated = 1 ] || { apt-get update -qq >/dev/null 2>&1 || true; updated=1; }; }

if [ ! -f "$fmnist/train-images-idx3-ubyte.gz" ]; then
  if have_apt; then
    apt_update
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null \
      || echo "install_data: could not install dataset-fashion-mnist (pass --data-dir to your own IDX files)"
  else
    echo "install_data: Fashion-MNIST missing; as root run 'apt-get install dataset-fashion-mnist'," \
         "or pass --data-dir to a folder of the standard IDX .gz files"
  fi
fi

if [ ! -f "$austen" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    tmp=$(mktemp -d)
    if have_apt; then apt_update; fi
    if (cd "$tmp" && apt-get download r-cran-janeaustenr >/dev/null 2>&1); then
      dpkg -x "$tmp"/r-cran-janeaustenr_*.deb "$tmp/x"
      rm -rf "$dest/janeaustenr"
      cp -r "$tmp/x/usr/lib/R/site-library/janeaustenr" "$dest/janeaustenr"
    else
      echo "install_data: could not download r-cran-janeaustenr (text tasks accept any text file)"
    fi
    rm -rf "$tmp"
  else
    echo "install_data: no apt; copy janeaustenr's R package folder to $dest/janeaustenr" \
         "or use your own text file"
  fi
fi
exit 0
