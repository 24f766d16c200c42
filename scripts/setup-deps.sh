#!/usr/bin/env bash
# Installs the Debian packages attograd builds with, but only those that are missing,
# so that `make test` and `make train` work on a fresh Debian 12 machine.
set -euo pipefail
packages=(cmake make g++ pkg-config libopenblas-dev libdnnl-dev libcxxopts-dev libgtest-dev
          nlohmann-json3-dev libbenchmark-dev libstb-dev fonts-dejavu-core libtomlplusplus-dev python3
          python3-venv python3-dev  # the Python package (python/): its venv and the headers of its module
          libprotobuf-dev protobuf-compiler libboost-dev libboost-stacktrace-dev tmux
          libopenmpi-dev openmpi-bin
          iproute2  # ip, tc: the multi-host test bed (tests/multihost/testbed.sh)
          ccache  # CI's builds: python.pip_install reuses make build's objects (python/tests/pip_install_check.sh)
          chromium chromium-driver python3-selenium)  # the explore page's browser test (tests/cli/explore_page.py)
[ "${ATTOGRAD_EXTRA_PACKAGES:-}" ] && read -r -a extra <<<"$ATTOGRAD_EXTRA_PACKAGES" && packages+=("${extra[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "attograd: installing missing Debian packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "attograd: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
