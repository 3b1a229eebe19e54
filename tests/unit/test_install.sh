#!/usr/bin/env bash
# After `meson install`, an application builds with
# `cc app.c $(pkg-config --cflags --libs cltrain)` and runs.
set -euo pipefail
build=${CLTRAIN_BUILD_ROOT:?}
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --no-rebuild --destdir "$dest" --quiet >/dev/null
pc=$(dirname "$(find "$dest" -name cltrain.pc | head -n 1)")
prefix=$(sed -n 's/^prefix=//p' "$pc/cltrain.pc")
export PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$dest"
flags=$(pkg-config --cflags --libs cltrain)
case "$flags" in *-lcltrain*) ;; *) echo "pkg-config --libs cltrain gave: $flags"; exit 1;; esac
cat > "$dest/app.c" <<'C'
#include <stdio.h>
#include <cltrain.h>
int main(void) {
    int n = -1;
    if (clt_device_count(&n) != CLT_OK) { printf("error: %s\n", clt_last_error()); return 1; }
    printf("cltrain %s, %d device(s)\n", clt_version(NULL, NULL, NULL), n);
    return 0;
}
C
# A sanitizer build's library needs the sanitizer runtime in the app too.
san=
if ldd "$build"/libcltrain.so 2>/dev/null | grep -q libasan; then san=-fsanitize=address,undefined; fi
cc $san "$dest/app.c" -o "$dest/app" $flags
LD_LIBRARY_PATH="$dest$prefix/lib/$(basename "$(dirname "$pc")")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$dest/app"
