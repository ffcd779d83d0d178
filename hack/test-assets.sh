#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, etcd, kubectl, helm) and k9s
# (a terminal client the e2e tests drive) from the Go
# module proxy into a cache folder outside the repo, keyed by versions, and prints
# that folder (use it as KUBEBUILDER_ASSETS). A complete folder is reused as is.
#
#   hack/test-assets.sh        all five, for the tests
#   hack/test-assets.sh demo   etcd, kube-apiserver and kubectl: what make run needs
#
# No download site is reachable from CI and Debian's packages are too old, so
# every binary is compiled from its published Go module.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.7.0}
HELM_VERSION=${HELM_VERSION:-4.3.2}
K9S_VERSION=${K9S_VERSION:-0.50.16}

cache_root=${PANORAMA_CACHE:-$HOME/.cache/panorama}
dir="$cache_root/assets/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-helm-$HELM_VERSION"
bins=(etcd kube-apiserver kubectl helm k9s)
if [ "${1:-}" = demo ]; then bins=(etcd kube-apiserver kubectl); fi

complete() {
  local b
  for b in "${bins[@]}"; do [ -x "$dir/$b" ] || return 1; done
}
if complete; then echo "$dir"; exit 0; fi

mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log() { echo "test-assets: $*" >&2; }
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local

# Progress for the first run, which compiles for minutes with nothing else
# to show: each binary's place in the queue and its cold build time on two
# cores, as measured for docs/development.md ("The first run").
declare -A cold_minutes=([etcd]=3 [kube-apiserver]=22 [kubectl]=3 [helm]=7 [k9s]=18)
missing=()
for b in "${bins[@]}"; do [ -x "$dir/$b" ] || missing+=("$b"); done
started=$SECONDS
building() { # binary version
  local i n=${#missing[@]} left=0 b
  for i in "${!missing[@]}"; do [ "${missing[$i]}" = "$1" ] && break; done
  for b in "${missing[@]:$i}"; do left=$((left + cold_minutes[$b])); done
  log "building $1 $2 ($((i + 1)) of $n; about ${cold_minutes[$1]} min cold, ${left} min left in all; $(((SECONDS - started) / 60)) min so far)"
}

build_kubernetes() {
  local mod="$work/kubernetes" staging minor=${K8S_VERSION#*.}
  minor=${minor%%.*}
  mkdir -p "$mod"
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
  # with local folders; a dependent module must pin them itself.
  local gomod
  gomod=$(cd "$work" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  staging=$(grep -Eo '^[[:space:]]+k8s\.io/[a-z0-9-]+ v0\.0\.0$' "$gomod" | awk '{print $1}' | sort -u)
  {
    echo "module panorama.local/testassets"
    echo "go $(go env GOVERSION | sed 's/^go//; s/\.[0-9]*$//')"
    echo "require k8s.io/kubernetes v$K8S_VERSION"
    for m in $staging; do echo "replace $m => $m v0.${K8S_VERSION#*.}"; done
  } >"$mod/go.mod"
  local ldflags="" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  for b in kube-apiserver kubectl; do
    [ -x "$dir/$b" ] && continue
    building "$b" "v$K8S_VERSION"
    (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$dir/$b.tmp" "k8s.io/kubernetes/cmd/$b" && mv "$dir/$b.tmp" "$dir/$b")
  done
}

build_etcd() {
  [ -x "$dir/etcd" ] && return
  local mod="$work/etcd"
  mkdir -p "$mod"
  cat >"$mod/go.mod" <<GOMOD
module panorama.local/etcd
go $(go env GOVERSION | sed 's/^go//; s/\.[0-9]*$//')
require go.etcd.io/etcd/server/v3 v$ETCD_VERSION
GOMOD
  cat >"$mod/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  building etcd "v$ETCD_VERSION"
  (cd "$mod" && go build -trimpath -o "$dir/etcd.tmp" . && mv "$dir/etcd.tmp" "$dir/etcd")
}

build_helm() {
  [ -x "$dir/helm" ] && return
  building helm "v$HELM_VERSION"
  GOBIN="$work/bin" go install -trimpath "helm.sh/helm/v${HELM_VERSION%%.*}/cmd/helm@v$HELM_VERSION"
  mv "$work/bin/helm" "$dir/helm"
}

build_k9s() {
  [ -x "$dir/k9s" ] && return
  building k9s "v$K9S_VERSION"
  GOBIN="$work/bin" go install -trimpath "github.com/derailed/k9s@v$K9S_VERSION"
  mv "$work/bin/k9s" "$dir/k9s"
}

build_etcd
build_kubernetes
if [ "${1:-}" != demo ]; then
  build_helm
  build_k9s
fi
complete
[ ${#missing[@]} -eq 0 ] || log "built ${missing[*]} in $(((SECONDS - started) / 60)) min"
echo "$dir"
