# The steps every layer's Makefile shares (SAM runs each with BuildMethod: makefile).
#
# Dependencies: pip fetches python3.13/arm64 (LAMBDA_ARCH) wheels cross-platform, so neither
# Docker nor a local python3.13 is needed for them. PYTHON is whichever is on PATH.
#
# Bytecode for the runtime's CPython, when the build machine has it (python3.13 on PATH, or
# RUNTIME_PYTHON=...): Lambda cannot write __pycache__ under /opt, so a layer shipped without
# it is compiled again at every cold start. unchecked-hash: valid whatever the files' mtimes.
# The bytecode goes beside the sources in the layer, whatever PYTHONPYCACHEPREFIX says here.
PYTHON ?= python3
RUNTIME_VERSION ?= 3.13
# The functions' architecture. x86_64 only for local invocation on an x86-64 machine without
# emulation (`sam local invoke` there, see docs/deploy.md); deployments are arm64.
LAMBDA_ARCH ?= arm64
WHEEL_ARCH := $(if $(filter x86_64,$(LAMBDA_ARCH)),x86_64,aarch64)
RUNTIME_PYTHON ?= $(shell command -v python$(RUNTIME_VERSION))

define install-wheels
$(PYTHON) -m pip install --quiet --disable-pip-version-check -r requirements.txt \
	--platform manylinux2014_$(WHEEL_ARCH) --platform manylinux_2_28_$(WHEEL_ARCH) \
	--implementation cp --python-version $(RUNTIME_VERSION) --only-binary=:all: --no-deps \
	--no-compile --target "$(ARTIFACTS_DIR)/python"
endef

define compile-for-runtime
find "$(ARTIFACTS_DIR)/python" -name __pycache__ -type d -prune -exec rm -rf {} +
@if [ -n "$(RUNTIME_PYTHON)" ] && "$(RUNTIME_PYTHON)" -c \
	'import sys; sys.exit("%d.%d" % sys.version_info[:2] != "$(RUNTIME_VERSION)")'; then \
	env -u PYTHONPYCACHEPREFIX "$(RUNTIME_PYTHON)" -m compileall -q -j 0 \
		--invalidation-mode unchecked-hash "$(ARTIFACTS_DIR)/python"; \
else \
	echo "$@: no python$(RUNTIME_VERSION) to compile with; shipping sources only" >&2; \
fi
endef
