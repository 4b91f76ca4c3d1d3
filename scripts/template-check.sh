#!/usr/bin/env bash
# scripts/template-check.sh: lint, validate and (when the Lambda main exists) build template.yaml with
# pinned tools, and fail on any finding.
#
#   scripts/template-check.sh            install (if needed) + check
#   scripts/template-check.sh install    only install the pinned tools
#   scripts/template-check.sh check      only check (tools must be installed)
#
# cfn-lint and the AWS SAM CLI come from PyPI, each in its own virtualenv under the cache dir: SAM pins an
# older cfn-lint for `sam validate --lint`, so the two cannot share one environment. Installing is
# idempotent: a stamp file, written last, records the pinned spec, and a lock serialises concurrent runs.
#
# Settings (environment):
#   SKEIN_TOOLS_CACHE   where the venvs live (default $HOME/.cache/skein-tools; cache it in CI)
#   SKEIN_SAM_BUILD_DIR where `sam build` writes (default: a temporary dir, removed afterwards)
#   PYTHON              the interpreter that creates the venvs (default python3; 3.9+)
#   TEMPLATE            the template to check (default template.yaml at the repository root)
set -euo pipefail

CFN_LINT_VERSION=1.58.0
SAM_CLI_VERSION=1.170.0
AWS_REGION_FOR_CHECKS=us-east-1

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SKEIN_TOOLS_CACHE:-$HOME/.cache/skein-tools}
PYTHON=${PYTHON:-python3}
TEMPLATE=${TEMPLATE:-$ROOT/template.yaml}

# No telemetry, no update checks, no prompts.
export SAM_CLI_TELEMETRY=0
export SAM_CLI_DISABLE_UPDATE_CHECK=1 # harmless where unsupported
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_NO_INPUT=1

log() { printf 'template-check: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# install_venv NAME BIN SPEC...: a venv $CACHE/NAME with SPEC installed and BIN on its bin/.
install_venv() {
	local name=$1 bin=$2
	shift 2
	local dir=$CACHE/$name stamp="$*"
	if [[ -x $dir/bin/$bin && -f $dir/.skein-stamp && $(<"$dir/.skein-stamp") == "$stamp" ]]; then
		return 0
	fi
	log "installing $stamp into $dir"
	# venv scripts carry the venv's absolute path in their shebangs, so a venv cannot be built elsewhere and
	# renamed into place. Build it in place instead; the stamp, written last, marks it complete, and a venv
	# without a stamp (an interrupted install) is rebuilt from scratch.
	rm -rf "$dir"
	"$PYTHON" -m venv "$dir" || die "cannot create a venv with $PYTHON (is python3-venv installed?)"
	if ! "$dir/bin/python" -m pip install --quiet "$@"; then
		rm -rf "$dir"
		die "pip install $* failed"
	fi
	[[ -x $dir/bin/$bin ]] || die "$bin missing from $dir after install"
	printf '%s' "$stamp" >"$dir/.skein-stamp"
}

install() {
	mkdir -p "$CACHE"
	local start=$SECONDS
	{
		if command -v flock >/dev/null 2>&1; then
			flock -w 900 9 || die "timed out waiting for the install lock $CACHE/.lock"
		fi
		install_venv "cfn-lint-$CFN_LINT_VERSION" cfn-lint "cfn-lint==$CFN_LINT_VERSION"
		install_venv "sam-cli-$SAM_CLI_VERSION" sam "aws-sam-cli==$SAM_CLI_VERSION"
	} 9>"$CACHE/.lock"
	log "tools ready in $((SECONDS - start))s (cfn-lint $CFN_LINT_VERSION, sam $SAM_CLI_VERSION, cache $CACHE)"
}

check() {
	local cfnlint=$CACHE/cfn-lint-$CFN_LINT_VERSION/bin/cfn-lint
	local sam=$CACHE/sam-cli-$SAM_CLI_VERSION/bin/sam
	[[ -x $cfnlint && -x $sam ]] || die "tools not installed; run: $0 install"
	[[ -f $TEMPLATE ]] || die "no template at $TEMPLATE"
	local start=$SECONDS failed=0

	log "cfn-lint $("$cfnlint" --version 2>&1 | awk '{print $NF}') $TEMPLATE"
	# Informational rules included: cfn-lint then exits non-zero on any error, warning or informational finding.
	if ! "$cfnlint" --include-checks I -- "$TEMPLATE"; then
		log "cfn-lint reported findings"
		failed=1
	fi

	log "iam-check (no \"*\" action or resource; Allow statements name their actions)"
	if ! "$CACHE/cfn-lint-$CFN_LINT_VERSION/bin/python" "$ROOT/scripts/iam-check.py" "$TEMPLATE"; then
		log "iam-check reported findings"
		failed=1
	fi

	log "sam validate --lint"
	local out
	# sam validate --lint exits 1 on lint findings; also refuse anything it prints that is not the "valid" line.
	if ! out=$(cd "$(dirname "$TEMPLATE")" && "$sam" validate --lint --region "$AWS_REGION_FOR_CHECKS" \
		--template-file "$TEMPLATE" 2>&1); then
		printf '%s\n' "$out" >&2
		log "sam validate --lint failed"
		failed=1
	elif grep -qiE '\b(E|W|I)[0-9]{4}\b|error|warning' <<<"$out"; then
		printf '%s\n' "$out" >&2
		log "sam validate --lint printed findings"
		failed=1
	else
		printf '%s\n' "$out" >&2
	fi

	if [[ -f $ROOT/examples/lambda/main.go ]]; then
		local builddir=${SKEIN_SAM_BUILD_DIR:-} cleanup=0
		if [[ -z $builddir ]]; then
			builddir=$(mktemp -d "${TMPDIR:-/tmp}/skein-sam-build.XXXXXX")
			cleanup=1
		fi
		log "sam build -> $builddir"
		# SAM's go1.x builder sets GOOS=linux and GOARCH from Architectures; the tags and CGO setting are ours:
		# the same flags as `CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o bootstrap`.
		if ! (cd "$ROOT" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:+$GOFLAGS }-tags=lambda.norpc -trimpath" \
			"$sam" build --template-file "$TEMPLATE" --build-dir "$builddir" \
			--cache-dir "$CACHE/sam-build-cache"); then
			log "sam build failed"
			failed=1
		fi
		if ((cleanup)); then rm -rf "$builddir"; fi
	else
		log "sam build skipped: examples/lambda/main.go does not exist yet"
	fi

	log "checks done in $((SECONDS - start))s"
	((failed == 0)) || die "template checks FAILED"
	log "template checks passed"
}

case ${1:-all} in
install) install ;;
check) check ;;
all) install && check ;;
*) die "usage: $0 [install|check|all]" ;;
esac
