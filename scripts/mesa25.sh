#!/usr/bin/env bash
# Installs lavapipe from Mesa 25.0 (Debian bookworm-backports) into a prefix, beside the
# system's Mesa (which stays as it is), and prints the environment that selects it:
#
#   eval "$(bash scripts/mesa25.sh)"          # or: bash scripts/mesa25.sh /opt/mesa25
#   .venv/bin/python -m torch_vk info          # driver: llvmpipe ... Mesa 25.0.x
#
# The .debs are fetched with `apt-get download` from bookworm-backports (added in its own
# sources file; libllvm19 comes from bookworm itself) and unpacked with `dpkg -x`; nothing is
# installed into the system. Libraries
# the extracted driver needs that the system lacks (or has in too old a version) are fetched
# from bookworm-backports too, found by checking the driver with ldd.
# Environment: MESA25_PREFIX (default /opt/mesa25), or the first argument. Run as root.
set -euo pipefail
PREFIX="${1:-${MESA25_PREFIX:-/opt/mesa25}}"
SUITE=bookworm-backports
LIBDIR="$PREFIX/usr/lib/x86_64-linux-gnu"
LVP="$LIBDIR/libvulkan_lvp.so"
ICD="$PREFIX/lvp_icd.x86_64.json"

log() { echo "mesa25: $*" >&2; }

if [ ! -f "$LVP" ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  SOURCES=/etc/apt/sources.list.d/torch-vk-bookworm-backports.list
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    log "adding $SOURCES"
    echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee "$SOURCES" >/dev/null
  fi
  log "apt-get update"
  $SUDO apt-get update -q >&2
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  fetch() {  # fetch PACKAGE...: download (from backports where it is there, else the release)
    for pkg in "$@"; do   # and unpack into the prefix
      (cd "$work" && { apt-get download -q "$pkg/$SUITE" >&2 2>/dev/null || apt-get download -q "$pkg" >&2; })
    done
    for deb in "$work"/*.deb; do
      [ -e "$deb" ] || continue
      log "unpacking $(basename "$deb")"
      dpkg -x "$deb" "$PREFIX"
      rm -f "$deb"
    done
  }
  mkdir -p "$PREFIX"
  fetch mesa-vulkan-drivers libllvm19
  # Whatever the driver still misses (a library, or a newer symbol version of one).
  for _ in 1 2 3; do
    missing="$(LD_LIBRARY_PATH="$LIBDIR" ldd "$LVP" 2>&1 |
               sed -n -e 's/^\s*\(lib[^ ]*\) => not found.*/\1/p' \
                      -e "s/.*version \`[^']*' not found (required by [^)]*) *$//p" | sort -u)"
    versions="$(LD_LIBRARY_PATH="$LIBDIR" ldd "$LVP" 2>&1 |
                sed -n "s/.*: version \`[^']*' not found (required by \([^)]*\)).*/\1/p" | sort -u)"
    [ -z "$missing$versions" ] && break
    pkgs=""
    for lib in $missing; do
      pkg="$(apt-cache search --names-only "^${lib%%.so*}[0-9.-]*$" 2>/dev/null | awk '{print $1}' | head -1)"
      [ -n "$pkg" ] && pkgs="$pkgs $pkg"
    done
    for path in $versions; do
      pkg="$(dpkg -S "$(basename "$path")" 2>/dev/null | head -1 | cut -d: -f1)"
      [ -n "$pkg" ] && pkgs="$pkgs $pkg"
    done
    [ -z "$pkgs" ] && { log "cannot resolve: $missing $versions"; exit 1; }
    log "also fetching:$pkgs"
    fetch $pkgs
  done
  [ -f "$LVP" ] || { log "no $LVP after unpacking"; exit 1; }
fi

# An ICD manifest naming the extracted driver by its absolute path.
cat > "$ICD" <<EOF
{
    "ICD": {
        "api_version": "1.4.305",
        "library_path": "$LVP"
    },
    "file_format_version": "1.0.1"
}
EOF
echo "export VK_ICD_FILENAMES=$ICD"
echo "export VK_DRIVER_FILES=$ICD"
echo "export LD_LIBRARY_PATH=$LIBDIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
