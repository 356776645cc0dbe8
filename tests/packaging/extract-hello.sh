#!/bin/sh
# tests/packaging/extract-hello.sh README OUT: writes the README's hello.c (the
# ```c block that starts with "/* hello.c") to OUT, so the packaging checks
# build exactly what a user copies.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 README.md OUT.c" >&2; exit 2; }
awk '/^```c$/ { inblk = 1; n = 0; next }
     inblk && /^```$/ { if (found) exit; inblk = 0; next }
     inblk { if (n++ == 0 && $0 ~ /^\/\* hello\.c/) found = 1; if (found) print }' "$1" > "$2"
[ -s "$2" ] || { echo "$0: no \`\`\`c block starting with /* hello.c in $1" >&2; exit 1; }
