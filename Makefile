# cua-rollout: `make demo` runs the whole pipeline locally; `make test` runs the test suite.
PY := .venv/bin/python

.PHONY: setup demo test lint typecheck up bench k8s-check chaos clean fuzz compose-test env audit gallery

setup:
	@bash scripts/setup.sh

demo: setup
	$(PY) -m services.cli demo

test:
	@bash scripts/setup.sh --oracle --vllm
	$(PY) -m pytest -q -n 3 --dist loadscope

fuzz: setup
	$(PY) -m pytest -q -m slow --hypothesis-show-statistics tests/runner/agent/test_parser_fuzz.py
	CUA_FUZZ_RANDOM=1 $(PY) -m pytest -q tests/e2e/test_schemathesis.py

lint: setup
	$(PY) -m ruff check common services tests bench

typecheck: setup
	$(PY) -m mypy common services

up: setup
	$(PY) -m services.cli up

bench: setup
	$(PY) bench/run_all.py

k8s-check: setup
	$(PY) scripts/validate_k8s.py

# docker-compose.yml on a real Docker engine (docs/docker.md): installs and starts one if needed, builds the
# images (base images too when no registry is reachable), runs every example rollout in the containers,
# tears it all down. Bounded in time; a second run reuses the built layers.
compose-test: setup
	timeout 5400 $(PY) -m tests.e2e.compose

# .env with random secrets for `docker compose up` (standard library only: needs no setup).
env:
	python3 -m common.env_file .env

# OSWorld audit (docs/osworld.md): every task of test_nogdrive.json that runs offline, set up and scored once
# by each do-nothing agent (noop, garbage, stall: docs/scoring.md) on 4 desktops (stand-in files for OSWorld's
# downloads unless `cua-rollout cache fill` fetched the real ones). Long (~1.5 h), so not part of `make test`
# (which audits one task per domain).
OSWORLD_INDEX ?= ../shared/osworld/test_nogdrive.json
audit: setup
	timeout 10800 $(PY) -m services.cli audit $(OSWORLD_INDEX) --agent noop --agent garbage --agent stall --envs 4

# The desktop gallery (docs/desktop/): step-0 screenshots of one OSWorld example per domain, from a real run.
gallery: setup
	timeout 1800 $(PY) scripts/desktop_gallery.py --out docs/desktop

# Chaos suite (docs/guarantees.md): 500 rollouts under faults; bounded in time, exits 1 on any loss.
chaos: setup
	timeout 2700 $(PY) -m tests.chaos

clean:
	rm -rf .cua .venv .venv-oracle .venv-vllm .pytest_cache
