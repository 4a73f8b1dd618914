#!/usr/bin/env bash
# Fetches a CUDA 12.4 compiler (nvcc 12.4.131) from Debian's trixie suite (non-free; libcu++-dev: main),
# unpacks it into a cache folder of its own and prints the path of its nvcc, e.g.
#   nvcc12=$(cuda/toolchains/cuda12.sh)
#   mvn ... -Dar4j.nvcc.cu12="$nvcc12"
#
# Nothing is installed: the packages are fetched with `apt-get download` against a private
# sources list, lists, cache and (empty) status file inside the cache folder, and unpacked with
# dpkg-deb; the machine's own package database and sources are neither read for this nor changed,
# and no root is needed. Packages are checked by apt against the Debian archive keyring
# (/usr/share/keyrings/debian-archive-keyring.gpg, from the debian-archive-keyring package).
#
# What is kept (about 215 MB), from:
#   nvidia-cuda-toolkit 12.4.131  nvcc, cicc, ptxas, fatbinary, nvlink, cudafe++, crt/link.stub,
#                                 libdevice.10.bc and the g++ wrapper that picks a host compiler
#   nvidia-cuda-dev 12.4.127      the CUDA headers and libcudart_static.a (a 934 MB package, most
#                                 of it other libraries' static archives: only the headers and
#                                 libcudart_static.a, libcudadevrt.a, libculibos.a are unpacked,
#                                 and the .deb is deleted afterwards)
#   libcu++-dev 2.3.2             <nv/target>, which cuda_fp16.h includes
# (cicc links libnvvm statically: libnvvm4 is not needed.)
#
# Making it work outside /usr: Debian's nvcc reads bin/nvcc.profile next to itself, which the
# package links to /etc/nvcc.profile with absolute /usr/lib/nvidia-cuda-toolkit paths. This
# script writes its own bin/nvcc.profile in the unpacked folder, with every path relative to
# nvcc's own directory (_HERE_): the include and library folders, libdevice, and PATH for the
# tools in usr/bin (ptxas, fatbinary, nvlink, cudafe++) and for the g++ wrapper. So the printed
# nvcc works from wherever the folder is, with no environment variables and no -ccbin.
#
# The host compiler: CUDA 12.4 supports gcc up to 13. The package's g++ wrapper takes g++-13,
# else g++-12 (Debian bookworm's), else older (it fails naming the clang to pass with nvcc's
# -ccbin when only clang is there).
#
# Architectures: nvcc 12.4 knows compute_50 .. compute_90 (sm_80, sm_86, sm_89, sm_90 for ar4j);
# it has no sm_100/sm_120, so a CUDA 12.4 build runs on Blackwell only through the driver's JIT
# compilation of its compute_90 PTX.
#
# Settings (environment):
#   AR4J_CUDA12_DIR     the cache folder (default ${XDG_CACHE_HOME:-~/.cache}/ar4j/cuda-12.4)
#   AR4J_CUDA12_MIRROR  the Debian mirror (default http://deb.debian.org/debian)
#   AR4J_CUDA12_KEYRING the keyring apt checks the suite's signature with
# Idempotent: a complete folder (its .complete stamp) is reused without any network access.
set -euo pipefail

toolkit_version=12.4.131~12.4.1-2
dev_version=12.4.127~12.4.1-2
libcuxx_version=2.3.2-2

dir="${AR4J_CUDA12_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ar4j/cuda-12.4}"
mirror="${AR4J_CUDA12_MIRROR:-http://deb.debian.org/debian}"
keyring="${AR4J_CUDA12_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}"
root="$dir/root"
nvcc="$root/usr/lib/nvidia-cuda-toolkit/bin/nvcc"
stamp="$dir/.complete"
want="nvidia-cuda-toolkit=$toolkit_version nvidia-cuda-dev=$dev_version libcu++-dev=$libcuxx_version"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$nvcc" ]]; then
  echo "$nvcc"
  exit 0
fi

say() { echo "cuda12.sh: $*" >&2; }
for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || { say "$tool not found: this script needs Debian's apt and dpkg (a Debian or Ubuntu machine)"; exit 1; }
done
[[ -r "$keyring" ]] || { say "no Debian archive keyring at $keyring (package debian-archive-keyring; or set AR4J_CUDA12_KEYRING)"; exit 1; }

rm -rf "$root" "$stamp"
apt_dir="$dir/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs" "$root"
echo "deb [signed-by=$keyring] $mirror trixie main non-free" >"$apt_dir/sources.list"
: >"$apt_dir/status"
apt_options=(
  -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::State::status=$apt_dir/status"
  -o "Dir::Cache=$apt_dir/cache" -o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=/dev/null"
  -o "APT::Architecture=amd64" -o "APT::Architectures=amd64" -o "Debug::NoLocking=1"
  -o "APT::Sandbox::User=$(id -un)" -o "Acquire::Retries=2" -o "Acquire::http::Timeout=30"
)
say "fetching the trixie non-free package lists from $mirror into $apt_dir"
apt-get -q "${apt_options[@]}" update >&2
say "downloading $want (about 1 GB)"
(cd "$apt_dir/debs" && apt-get -q "${apt_options[@]}" download \
  "nvidia-cuda-toolkit=$toolkit_version" "nvidia-cuda-dev=$dev_version" "libcu++-dev=$libcuxx_version" >&2)

deb_of() { local f=("$apt_dir/debs/$1"_*.deb); [[ -f "${f[0]}" ]] || { say "no $1 package was downloaded"; exit 1; }; echo "${f[0]}"; }
say "unpacking into $root"
dpkg-deb -x "$(deb_of nvidia-cuda-toolkit)" "$root"
dpkg-deb -x "$(deb_of libcu++-dev)" "$root"
# Only the headers and the CUDA runtime's static archives of nvidia-cuda-dev (2.5 GB unpacked).
dpkg-deb --fsys-tarfile "$(deb_of nvidia-cuda-dev)" | tar -x -C "$root" --wildcards \
  './usr/include/*' \
  ./usr/lib/x86_64-linux-gnu/libcudart_static.a \
  ./usr/lib/x86_64-linux-gnu/libcudadevrt.a \
  ./usr/lib/x86_64-linux-gnu/libculibos.a

# nvcc.profile: the package's is a link to /etc/nvcc.profile; this one points into $root.
profile="$root/usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile"
rm -f "$profile"
cat >"$profile" <<'PROFILE'
# Written by ar4j's cuda/toolchains/cuda12.sh: every path relative to this folder (_HERE_).
TOP = $(_HERE_)/../../..
NVVMIR_LIBRARY_DIR = $(TOP)/lib/nvidia-cuda-toolkit/libdevice
PATH += $(_HERE_):$(TOP)/bin:
INCLUDES += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib/x86_64-linux-gnu"
PROFILE

for needed in "$nvcc" "$root/usr/lib/nvidia-cuda-toolkit/bin/cicc" "$root/usr/bin/ptxas" "$root/usr/bin/fatbinary" \
              "$root/usr/bin/nvlink" "$root/usr/bin/cudafe++" "$root/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc" \
              "$root/usr/include/cuda_runtime.h" "$root/usr/include/nv/target" "$root/usr/lib/x86_64-linux-gnu/libcudart_static.a"; do
  [[ -e "$needed" ]] || { say "the unpacked toolkit lacks $needed"; exit 1; }
done
"$nvcc" --version >&2
rm -rf "$apt_dir/debs" "$apt_dir/cache"
echo "$want" >"$stamp"
echo "$nvcc"
