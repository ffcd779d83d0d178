#!/usr/bin/env bash
# Fails when git tracks a build output: an ELF binary, or any file over 1 MiB.
# Binaries belong in bin/ or the Go cache, never in the repository or the image.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  size=$(stat -c %s "$f")
  if [ "$size" -gt "$limit" ]; then
    echo "tracked file over 1 MiB: $f ($size bytes)" >&2; bad=1
  fi
  if [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' ')" = "7f454c46" ]; then
    echo "tracked ELF binary: $f" >&2; bad=1
  fi
done < <(git ls-files -z)
exit "$bad"
