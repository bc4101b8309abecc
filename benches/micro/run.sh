#!/usr/bin/env bash
# Builds and runs the system-call cost probe (see syscall_costs.c).
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
gcc -O2 -o "$out/syscall_costs" "$dir/syscall_costs.c" -lpthread
prctl_note="(timer slack left at its default here)"
"$out/syscall_costs"
echo "$prctl_note"
rm -rf "$out"
