#!/usr/bin/env bash
# Validates everything under deploy/ with real tools:
#   1. renders each kustomization (kubectl kustomize, else kustomize, else builds
#      kustomize from the Go module proxy);
#   2. checks every Kubernetes object against the API's OpenAPI schemas of the
#      oldest and newest Kubernetes versions we target (kubernetes-validate, strict:
#      unknown fields fail), and fails if any kind other than the expected CRDs was
#      skipped for want of a schema;
#   3. checks the CRD objects (KEDA ScaledObject, PodMonitor, PrometheusRule)
#      against the models generated from their CRDs (@kubernetes-models/*);
#   4. checks the alert rules with promtool: `check rules` on the PrometheusRule's
#      spec, then the unit tests of deploy/prometheus/alerts.test.yaml;
#   5. parses every Grafana dashboard query with promtool.
#
# A developer's script, not part of `npm test`: it installs tools (pip into a venv,
# npm packages and, as root, Debian's `prometheus` package for promtool). The fast
# checks that need none of that (metric names, dashboard and rule shapes, manifest
# consistency) are in vitest: test/integration/deploy-artifacts.test.ts and
# test/unit/deploy/.
#
# Usage: scripts/validate-manifests.sh            (from anywhere; exit 0 = all good)
# Env:   K8S_VERSIONS="1.29.0 1.37.0"  Kubernetes versions to validate against
#        VALIDATE_CACHE=DIR            where tools are installed (default .cache/validate-manifests)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPLOY="$ROOT/deploy"
CACHE="${VALIDATE_CACHE:-$ROOT/.cache/validate-manifests}"
K8S_VERSIONS="${K8S_VERSIONS:-1.29.0 1.37.0}"
KUBERNETES_VALIDATE_VERSION=1.37.0
KUSTOMIZE_VERSION=v5.5.0
KEDA_MODELS_VERSION=2.0.0
PROMETHEUS_OPERATOR_MODELS_VERSION=6.0.0
# Kinds no built-in schema covers; step 3 checks them instead.
CRD_KINDS_RE='keda\.sh/v1alpha1/ScaledObject|monitoring\.coreos\.com/v1/(PodMonitor|PrometheusRule)'
KUSTOMIZATIONS=(kubernetes/base kubernetes/overlays/example prometheus grafana)

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$CACHE"

step() { printf '\n== %s\n' "$*"; }
die() { printf 'validate-manifests: %s\n' "$*" >&2; exit 1; }

# --- tools --------------------------------------------------------------------

render() {
  if command -v kubectl >/dev/null 2>&1; then
    kubectl kustomize "$1"
  elif command -v kustomize >/dev/null 2>&1; then
    kustomize build "$1"
  else
    if [[ ! -x "$CACHE/bin/kustomize" ]]; then
      command -v go >/dev/null 2>&1 || die "no kubectl, kustomize or go to render with; install kubectl or kustomize"
      echo "building kustomize $KUSTOMIZE_VERSION from the Go module proxy into $CACHE/bin ..." >&2
      GOBIN="$CACHE/bin" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" >&2
    fi
    "$CACHE/bin/kustomize" build "$1"
  fi
}

ensure_python_tools() {
  local venv="$CACHE/venv"
  if [[ ! -x "$venv/bin/kubernetes-validate" ]]; then
    echo "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $venv ..."
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  fi
  KUBERNETES_VALIDATE="$venv/bin/kubernetes-validate"
  PYTHON="$venv/bin/python"   # has PyYAML, a dependency of kubernetes-validate
}

ensure_node_tools() {
  local dir="$CACHE/npm"
  if [[ ! -d "$dir/node_modules/@kubernetes-models/keda" || ! -d "$dir/node_modules/@kubernetes-models/prometheus-operator" ]]; then
    echo "installing @kubernetes-models/keda and prometheus-operator into $dir ..."
    mkdir -p "$dir"
    [[ -f "$dir/package.json" ]] || echo '{"name":"validate-manifests-tools","private":true,"type":"module"}' >"$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error \
      "@kubernetes-models/keda@$KEDA_MODELS_VERSION" \
      "@kubernetes-models/prometheus-operator@$PROMETHEUS_OPERATOR_MODELS_VERSION" \
      "yaml@^2")
  fi
  # The checker lives beside node_modules so that its imports resolve there.
  cat >"$dir/check-crds.mjs" <<'EOF'
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { PodMonitor, PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';

const models = {
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};
let failed = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const object = doc.toJS();
    const Model = models[`${object?.apiVersion}/${object?.kind}`];
    if (!Model) continue;
    const what = `${file}: ${object.kind}/${object.metadata?.name}`;
    try {
      new Model(object).validate();
      console.log(`ok   ${what}`);
    } catch (error) {
      failed += 1;
      console.log(`FAIL ${what}: ${error.message}`);
    }
  }
}
process.exit(failed === 0 ? 0 : 1);
EOF
  CHECK_CRDS="$dir/check-crds.mjs"
}

ensure_promtool() {
  if ! command -v promtool >/dev/null 2>&1; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
      echo "installing promtool (Debian package prometheus) ..."
      apt-get update -qq
      # NOTE: the package also ships the Prometheus server; in a container without
      # systemd its service is not started.
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
    else
      die "promtool not found; install it (Debian: apt-get install prometheus) and run again"
    fi
  fi
}

# --- 1. render ----------------------------------------------------------------

step "1. render kustomizations"
for k in "${KUSTOMIZATIONS[@]}"; do
  out="$WORK/$(echo "$k" | tr / _).yaml"
  render "$DEPLOY/$k" >"$out"
  printf '%-32s %3d objects\n' "$k" "$(grep -c '^kind:' "$out")"
done
RENDERED=("$WORK"/*.yaml)

# --- 2. Kubernetes API schemas --------------------------------------------------

step "2. Kubernetes API schemas (kubernetes-validate --strict; versions: $K8S_VERSIONS)"
ensure_python_tools
status=0
for version in $K8S_VERSIONS; do
  for file in "${RENDERED[@]}"; do
    log="$WORK/kv.log"
    result=ok
    "$KUBERNETES_VALIDATE" --strict --quiet -k "$version" "$file" >"$log" 2>&1 || result=FAILED
    # A kind without a schema only warns; anything but our CRDs is a mistake
    # (a typo in apiVersion or kind) and fails.
    grep -v -E "Couldn't find schema for kind" "$log" || true
    while read -r line; do
      kind_av="$(sed -E "s/.*kind ([A-Za-z0-9]+) with api version ([^ ]+) .*/\2\/\1/" <<<"$line")"
      if ! grep -q -E "^($CRD_KINDS_RE)$" <<<"$kind_av"; then
        echo "ERROR no schema for $kind_av in kubernetes $version: a wrong apiVersion or kind?"
        result=FAILED
      fi
    done < <(grep -E "Couldn't find schema for kind" "$log" || true)
    printf '%-8s %-36s %s\n' "$version" "$(basename "$file")" "$result"
    [[ $result == ok ]] || status=1
  done
done
[[ $status == 0 ]] || die "Kubernetes schema validation failed"
echo "no built-in schema, as expected (checked in step 3): $(grep -h -E '^kind: (ScaledObject|PodMonitor|PrometheusRule)$' "${RENDERED[@]}" | sort -u | sed 's/kind: //' | paste -sd ' ')"

# --- 3. CRD schemas -------------------------------------------------------------

step "3. CRD objects (@kubernetes-models/keda $KEDA_MODELS_VERSION, prometheus-operator $PROMETHEUS_OPERATOR_MODELS_VERSION)"
ensure_node_tools
(cd "$WORK" && node "$CHECK_CRDS" ./*.yaml) || die "CRD validation failed"

# --- 4. alert rules -------------------------------------------------------------

step "4. alert rules (promtool)"
ensure_promtool
promtool --version 2>&1 | head -n 1
# promtool reads plain rule files (`groups:`), i.e. the PrometheusRule's spec.
"$PYTHON" - "$DEPLOY/prometheus/alerts.yaml" "$WORK/rules" <<'EOF'
import os, sys, yaml

def block(dumper, text):
    style = '|' if '\n' in text else None
    return dumper.represent_scalar('tag:yaml.org,2002:str', text, style=style)

yaml.SafeDumper.add_representer(str, block)
source, out = sys.argv[1], sys.argv[2]
with open(source) as f:
    rule = yaml.safe_load(f)
assert rule.get('kind') == 'PrometheusRule', f'{source}: expected kind PrometheusRule'
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, 'alerts.rules.yaml'), 'w') as f:
    yaml.safe_dump(rule['spec'], f, sort_keys=False)
# The unit tests compare annotations verbatim; `check rules` covers their templates.
for group in rule['spec']['groups']:
    for r in group['rules']:
        r.pop('annotations', None)
with open(os.path.join(out, 'switchyard-rules.yaml'), 'w') as f:
    yaml.safe_dump(rule['spec'], f, sort_keys=False)
EOF
promtool check rules "$WORK/rules/alerts.rules.yaml"
cp "$DEPLOY/prometheus/alerts.test.yaml" "$WORK/rules/"
(cd "$WORK/rules" && promtool test rules alerts.test.yaml)

# --- 5. dashboard queries -------------------------------------------------------

step "5. dashboard queries parse as PromQL (promtool, Grafana variables filled in)"
# Each panel query becomes a recording rule, which `promtool check rules` parses.
"$PYTHON" - "$DEPLOY/grafana/switchyard-dashboard.json" "$WORK/dashboard.rules.yaml" <<'PY'
import json, sys, yaml

source, out = sys.argv[1], sys.argv[2]
with open(source) as f:
    dashboard = json.load(f)

def panels(items):
    for panel in items:
        yield panel
        yield from panels(panel.get('panels', []))

# Range variables become durations; $namespace and $destination sit inside
# matcher strings, where any text parses.
ranges = {'$__rate_interval': '5m', '$__interval': '1m', '${__range}': '6h', '$__range': '6h'}
rules = []
for panel in panels(dashboard['panels']):
    for target in panel.get('targets', []):
        expr = target['expr']
        for variable, value in ranges.items():
            expr = expr.replace(variable, value)
        rules.append({'record': f"dashboard:panel_{panel['id']}_{target['refId']}", 'expr': expr})
with open(out, 'w') as f:
    yaml.safe_dump({'groups': [{'name': 'dashboard', 'rules': rules}]}, f, sort_keys=False)
print(f'{len(rules)} queries')
PY
promtool check rules "$WORK/dashboard.rules.yaml"

step "all manifests, CRD objects, alert rules and dashboard queries are valid"
