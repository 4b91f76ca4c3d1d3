#!/usr/bin/env bash
# scripts/template-check.sh: lint, validate and build template.yaml with pinned tools, do the same for a
# project as `skein init` writes it, and fail on any finding.
#
#   scripts/template-check.sh            install (if needed) + check + project
#   scripts/template-check.sh install    only install the pinned tools
#   scripts/template-check.sh check      only check template.yaml (tools must be installed), and that
#                                        iam-check refuses the old roles (scripts/testdata/iam-old-roles.yaml)
#   scripts/template-check.sh build DIR  only `sam build` template.yaml into DIR, as `check` builds it (tools must
#                                        be installed; localstack/deploy.sh deploys what it builds)
#   scripts/template-check.sh project    only check a generated project (tools must be installed): skein init
#                                        writes it into a temporary dir (go.mod replaces Skein with this checkout),
#                                        then its arm64 bootstrap builds, `make test` passes, its template passes
#                                        the checks above, `make validate` passes for both config envs and
#                                        `make build` (sam build) succeeds
#
# cfn-lint and the AWS SAM CLI come from PyPI, each in its own virtualenv under the cache dir: SAM pins an
# older cfn-lint for `sam validate --lint`, so the two cannot share one environment. Installing is
# idempotent: a stamp file, written last, records the pinned spec, and a lock serialises concurrent runs.
#
# Settings (environment):
#   SKEIN_TOOLS_CACHE   where the venvs live (default $HOME/.cache/skein-tools; cache it in CI)
#   SKEIN_SAM_BUILD_DIR where `sam build` writes (default: a temporary dir, removed afterwards)
#   PYTHON              the interpreter that creates the venvs (default python3; 3.9+)
#   TEMPLATE            the template `check` checks (default template.yaml at the repository root)
#   SKEIN_PROJECT_DIR   where `project` generates (default: a temporary dir, removed afterwards)
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

# tools: the pinned cfn-lint and sam, or die.
tools() {
	cfnlint=$CACHE/cfn-lint-$CFN_LINT_VERSION/bin/cfn-lint
	sam=$CACHE/sam-cli-$SAM_CLI_VERSION/bin/sam
	[[ -x $cfnlint && -x $sam ]] || die "tools not installed; run: $0 install"
}

# lint TEMPLATE: cfn-lint (informational rules included), iam-check and sam validate --lint; returns 1 on a finding.
lint() {
	local template=$1 failed=0 out
	log "cfn-lint $("$cfnlint" --version 2>&1 | awk '{print $NF}') $template"
	# Informational rules included: cfn-lint then exits non-zero on any error, warning or informational finding.
	if ! "$cfnlint" --include-checks I -- "$template"; then
		log "cfn-lint reported findings"
		failed=1
	fi

	log "iam-check (no \"*\" action or resource; Allow statements name their actions; the public function writes no run)"
	if ! "$CACHE/cfn-lint-$CFN_LINT_VERSION/bin/python" "$ROOT/scripts/iam-check.py" "$template"; then
		log "iam-check reported findings"
		failed=1
	fi

	log "sam validate --lint"
	# sam validate --lint exits 1 on lint findings; also refuse anything it prints that is not the "valid" line.
	if ! out=$(cd "$(dirname "$template")" && "$sam" validate --lint --region "$AWS_REGION_FOR_CHECKS" \
		--template-file "$template" 2>&1); then
		printf '%s\n' "$out" >&2
		log "sam validate --lint failed"
		failed=1
	elif ! quiet_validate "$out"; then
		failed=1
	fi
	return "$failed"
}

# quiet_validate OUTPUT: print sam validate's output; return 1 if it holds a finding.
quiet_validate() {
	printf '%s\n' "$1" >&2
	if grep -qiE '\b(E|W|I)[0-9]{4}\b|error|warning' <<<"$1"; then
		log "sam validate --lint printed findings"
		return 1
	fi
}

# sam_build TEMPLATE CACHEDIR: sam build from the template's directory into a temporary dir (or
# SKEIN_SAM_BUILD_DIR), with sam's build cache in CACHEDIR.
sam_build() {
	local template=$1 cachedir=$2 builddir=${SKEIN_SAM_BUILD_DIR:-} cleanup=0 rc=0
	if [[ -z $builddir ]]; then
		builddir=$(mktemp -d "${TMPDIR:-/tmp}/skein-sam-build.XXXXXX")
		cleanup=1
	fi
	log "sam build $template -> $builddir"
	# SAM's go1.x builder sets GOOS=linux and GOARCH from Architectures; the tags and CGO setting are ours:
	# the same flags as `CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o bootstrap`.
	if ! (cd "$(dirname "$template")" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:+$GOFLAGS }-tags=lambda.norpc -trimpath" \
		"$sam" build --template-file "$template" --build-dir "$builddir" \
		--cache-dir "$cachedir"); then
		log "sam build failed"
		rc=1
	fi
	if ((cleanup)); then rm -rf "$builddir"; fi
	return "$rc"
}

check() {
	tools
	[[ -f $TEMPLATE ]] || die "no template at $TEMPLATE"
	local start=$SECONDS failed=0
	lint "$TEMPLATE" || failed=1
	# The IAM check must refuse the roles from before the webhook function stopped writing runs: a check
	# that passes them proves nothing.
	log "iam-check refuses the old roles (scripts/testdata/iam-old-roles.yaml)"
	if ! "$CACHE/cfn-lint-$CFN_LINT_VERSION/bin/python" "$ROOT/scripts/iam-check.py" --must-refuse \
		"$ROOT/scripts/testdata/iam-old-roles.yaml"; then
		log "iam-check did not refuse the old roles"
		failed=1
	fi
	sam_build "$TEMPLATE" "$CACHE/sam-build-cache" || failed=1
	log "checks done in $((SECONDS - start))s"
	((failed == 0)) || die "template checks FAILED"
	log "template checks passed"
}

# project: generate a project with skein init and check it as its owner would use it.
project() {
	tools
	local start=$SECONDS failed=0 dir=${SKEIN_PROJECT_DIR:-} cleanup=0
	if [[ -z $dir ]]; then
		dir=$(mktemp -d "${TMPDIR:-/tmp}/skein-project.XXXXXX")
		cleanup=1
	fi
	local proj=$dir/orders
	rm -rf "$proj"
	log "skein init $proj"
	(cd "$ROOT" && go build -o "$dir/skein" ./cmd/skein) || die "go build ./cmd/skein failed"
	"$dir/skein" init -replace "$ROOT" -module example.com/acme/orders -name orders "$proj" >/dev/null ||
		die "skein init failed"

	log "project: arm64 bootstrap (GOOS=linux GOARCH=arm64 CGO_ENABLED=0 -tags lambda.norpc)"
	if ! (cd "$proj" && make bootstrap >/dev/null && [[ -f bootstrap ]]); then
		log "project: the bootstrap does not build"
		failed=1
	fi
	log "project: make test"
	if ! make -C "$proj" test; then
		log "project: make test failed"
		failed=1
	fi
	lint "$proj/template.yaml" || failed=1
	local env out
	for env in default prod; do
		log "project: make validate ENV=$env (samconfig.toml's $env environment)"
		if ! out=$(make -s -C "$proj" validate ENV="$env" SAM="$sam" 2>&1); then
			printf '%s\n' "$out" >&2
			log "project: make validate ENV=$env failed"
			failed=1
		elif ! quiet_validate "$out"; then
			failed=1
		fi
	done
	sam_build "$proj/template.yaml" "$dir/sam-build-cache" || failed=1

	if ((cleanup)); then rm -rf "$dir"; fi
	log "project checks done in $((SECONDS - start))s"
	((failed == 0)) || die "project checks FAILED (the generated project: rerun with SKEIN_PROJECT_DIR set to keep it)"
	log "project checks passed"
}

case ${1:-all} in
install) install ;;
check) check ;;
project) project ;;
build) tools && SKEIN_SAM_BUILD_DIR=${2:?usage: $0 build DIR} sam_build "$TEMPLATE" "$CACHE/sam-build-cache" ;;
all) install && check && project ;;
*) die "usage: $0 [install|check|project|build DIR|all]" ;;
esac
