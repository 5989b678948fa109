#!/usr/bin/env bash
# Runs COMMAND where the machine looks as a user's machine without build tools does: no
# libfabric, no compiler, no CMake or Ninja, no C or Python headers. For the test of the wheel
# (tests/test_wheel.py), which must install and run from the wheel alone.
#
#   unshare --mount --propagation private -- bash without_build_tools.sh SCRATCH PYTHON_INCLUDE COMMAND...
#
# Only inside that private mount namespace: an overlay over each directory that holds
# libfabric or a build tool leaves those files out (a whiteout, a character device 0:0, in the
# overlay's upper layer, which lives on a tmpfs mounted at the empty directory SCRATCH), and an
# empty tmpfs covers the header directories and GCC's own (cc1, cc1plus). The machine itself is
# untouched: the mounts end with the namespace.
set -euo pipefail
scratch=$1 python_include=$2
shift 2
mount -t tmpfs rma-scratch "$scratch"

hide() {  # hide DIR NAME...: DIR, without the NAMEs
  local dir=$1 layer
  shift
  [ $# -gt 0 ] || return 0
  layer="$scratch/$(echo "$dir" | tr / _)"
  mkdir -p "$layer/upper" "$layer/work"
  for name in "$@"; do mknod "$layer/upper/$name" c 0 0; done
  mount -t overlay rma-hide -o "lowerdir=$dir,upperdir=$layer/upper,workdir=$layer/work" "$dir"
}

# libfabric, where the dynamic loader's cache finds it.
ldconfig=$(PATH="$PATH:/usr/sbin:/sbin" command -v ldconfig)
for dir in $("$ldconfig" -p | awk '/libfabric\.so/ {print $NF}' | xargs -r -n 1 dirname | xargs -r -n 1 realpath | sort -u); do
  hide "$dir" $(cd "$dir" && ls -d libfabric.* 2>/dev/null || true)
done
# The compilers, linkers' drivers, CMake and Ninja, wherever PATH and the usual places have them.
tools='^((x86_64-linux-gnu-)?(gcc|g\+\+|cc|c\+\+|cpp|clang|clang\+\+)(-[0-9.]+)?|cmake|ninja)$'
for dir in $( (echo "$PATH" | tr : '\n'; echo /usr/bin /usr/local/bin | tr ' ' '\n') | xargs -r -n 1 realpath -q -e 2>/dev/null | sort -u); do
  hide "$dir" $(ls "$dir" | grep -E "$tools" || true)
done
for dir in /usr/include /usr/local/include /usr/lib/gcc "$python_include"; do
  [ -d "$dir" ] && mount -t tmpfs rma-hide "$dir"
done
exec "$@"
