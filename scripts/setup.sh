#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks for cua-rollout: system packages (when root,
# otherwise prints the exact command), then the Python package with its env-pod and test extras
# into .venv. Idempotent: a second run only checks.
# --oracle also builds .venv-oracle: OSWorld's evaluator package (`desktop-env`, --no-deps) with the
# libraries its compared modules import, for the differential tests only (tests/oracle/).
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_ORACLE=0
for arg in "$@"; do
  case "$arg" in
    --oracle) WITH_ORACLE=1 ;;
    *) echo "setup: unknown option $arg (known: --oracle)" >&2; exit 2 ;;
  esac
done

# Debian package : what proves it is installed, a command or (starting with /) a file glob; one per
# line, so merges stay simple. The desktop (X, window manager, tools OSWorld's actions and tasks use),
# the apps of OSWorld's domains (Chrome -> Debian's chromium, LibreOffice with its GTK 3 front end, VLC,
# GIMP, Thunderbird, the file manager, socat for Chrome's DevTools port), accessibility (AT-SPI bus,
# pyatspi for the accessibility tree), recording (ffmpeg), OCR (tesseract) and sandboxes (bubblewrap,
# iproute2, util-linux);
# `mimetype` (libfile-mimeinfo-perl) makes xdg-open type files by name first, as GNOME's gio does.
PACKAGES=(
  redis-server:redis-server
  xvfb:Xvfb
  xdotool:xdotool
  openbox:openbox
  xterm:xterm
  x11-utils:xdpyinfo
  wmctrl:wmctrl
  xclip:xclip
  xsel:xsel
  dbus-x11:dbus-launch
  mousepad:mousepad
  xdg-utils:xdg-open
  libfile-mimeinfo-perl:mimetype
  git:git
  unzip:unzip
  sudo:sudo
  procps:pkill
  chromium:chromium
  openssl:openssl
  vlc:vlc
  ffmpeg:ffmpeg
  util-linux:setpriv
  libreoffice-calc:soffice
  tesseract-ocr:tesseract
  libglib2.0-bin:gsettings
  gsettings-desktop-schemas:/usr/share/glib-2.0/schemas/org.gnome.desktop.background.gschema.xml
  dconf-gsettings-backend:/usr/lib/*/gio/modules/libdconfsettings.so
  libreoffice-writer:lowriter
  libreoffice-impress:loimpress
  libreoffice-gtk3:/usr/lib/libreoffice/program/libvclplug_gtk3lo.so
  gimp:gimp
  thunderbird:thunderbird
  pcmanfm:pcmanfm
  socat:socat
  at-spi2-core:/usr/libexec/at-spi-bus-launcher
  python3-pyatspi:/usr/lib/python3/dist-packages/pyatspi
  iproute2:ip
  bubblewrap:bwrap
  nginx:/usr/sbin/nginx
)

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
    echo "setup: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing system packages. Install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

# OSWorld's Chrome tasks stop the browser with `pkill chrome`: Debian's browser process is named
# `chromium`, so a hard link named `chrome` beside it (the env's `google-chrome` shim runs that) gives
# the browser and its child processes the name `chrome`. Refreshed every run: an upgrade replaces the file.
if [ -x /usr/lib/chromium/chromium ] && [ -w /usr/lib/chromium ]; then
  ln -f /usr/lib/chromium/chromium /usr/lib/chromium/chrome
fi

# librosa compiles its numba functions when first imported (about a minute) and caches them in its
# package folder: do it once here rather than in the first compare_audios call or test.
warm_librosa() {
  echo "setup: compiling librosa's numba functions ($1)"
  "$1" -c "import librosa.core.audio, librosa.feature, librosa.util" >/dev/null
}

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "setup: Python >= 3.11 is required ($PYTHON is $("$PYTHON" --version 2>&1))" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python packages into .venv"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[test]"
  warm_librosa .venv/bin/python
  rm -f .venv/.installed-* && touch "$stamp"
fi
if ((WITH_ORACLE)); then
  oracle_stamp=.venv-oracle/.installed-$(cat tests/oracle/requirements.txt | sha256sum | cut -c1-16)
  if [ ! -f "$oracle_stamp" ]; then
    echo "setup: installing the OSWorld oracle environment into .venv-oracle"
    [ -x .venv-oracle/bin/python ] || "$PYTHON" -m venv .venv-oracle
    .venv-oracle/bin/python -m pip install -q --upgrade pip >/dev/null
    .venv-oracle/bin/python -m pip install -q -r tests/oracle/requirements.txt
    .venv-oracle/bin/python -m pip install -q --no-deps "desktop-env==1.0.2"
    warm_librosa .venv-oracle/bin/python
    rm -f .venv-oracle/.installed-* && touch "$oracle_stamp"
  fi
fi
echo "setup: ok"
