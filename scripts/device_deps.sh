#!/usr/bin/env bash
# Gathers, on a Debian machine, the libraries GRID builds against, for a
# machine that has a compiler, CMake and a Python with torch but no package
# manager and no network (a GPU machine lent for a check): the Debian
# packages of Abseil, COIN-OR Clp (and what its libraries load) and
# nlohmann-json, downloaded with apt and unpacked with dpkg -x into DIR.
# scripts/device_check.sh OUT DIR builds against them there. Not pybind11:
# the extension must use the one the machine's torch was built with (a pip
# torch bundles it), or torch's classes are unknown to it.
#
#   scripts/device_deps.sh DIR     (default .device-deps, which git ignores)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.device-deps}
packages=(
  libabsl-dev libabsl20220623
  coinor-libclp-dev coinor-libclp1 coinor-libcoinutils-dev coinor-libcoinutils3v5
  coinor-libosi-dev coinor-libosi1v5
  liblapack3 libblas3 libgfortran5 libquadmath0  # what libCoinUtils loads
  nlohmann-json3-dev
)
debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
(cd "$debs" && apt-get download "${packages[@]}" > /dev/null)
rm -rf "$dir"
mkdir -p "$dir"
for d in "$debs"/*.deb; do dpkg -x "$d" "$dir"; done
# Only what a build and a run need: shared libraries, headers, CMake and
# pkg-config files.
rm -rf "$dir/usr/share/doc" "$dir/usr/share/man" "$dir/usr/share/lintian"
find "$dir" -name '*.a' -delete
# BLAS and LAPACK are found through Debian's alternatives, which dpkg -x
# does not make.
lib=$dir/usr/lib/x86_64-linux-gnu
ln -sf lapack/liblapack.so.3 "$lib/liblapack.so.3"
ln -sf blas/libblas.so.3 "$lib/libblas.so.3"
echo "device_deps: ${#packages[@]} packages in $dir ($(du -sh "$dir" | cut -f1))"
