#!/usr/bin/env bash
# Provides the Kubernetes binaries the tests, the local fleet and the demo run:
# kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok, plus kwok's stage
# config.
#
# First it tries the official release binaries for the pinned versions, each verified
# against its published SHA-256 (hack/k8sbins: dl.k8s.io for kube-*, etcd's GitHub release
# tarball and SHA256SUMS; kwok only when FLOTILLA_KWOK_SHA256 pins its hash, as kwok's
# releases publish no checksum file). Whatever cannot be downloaded and verified (offline,
# 404, bad checksum, truncated) is built from source through the Go module proxy instead.
#   FLOTILLA_K8S_DOWNLOAD=0         skip the downloads
#   FLOTILLA_K8S_RELEASE_URL        default https://dl.k8s.io/release
#   FLOTILLA_ETCD_RELEASE_URL       default https://github.com/etcd-io/etcd/releases/download
#   FLOTILLA_KWOK_RELEASE_URL       default https://github.com/kubernetes-sigs/kwok/releases/download
#   FLOTILLA_K8S_SOURCE_BUILD=0     fail instead of building from source (tests)
#
# Binaries are cached outside the clone, in $FLOTILLA_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/flotilla/<versions>), and linked into $1 (default bin/k8s).
# A second run finds them and does nothing. When KUBEBUILDER_ASSETS is set and holds
# kube-apiserver and etcd, those are linked instead and only what is missing is fetched.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
OUT=${1:-bin/k8s}
CACHE_ROOT=${FLOTILLA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla}
CACHE="$CACHE_ROOT/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

mkdir -p "$CACHE" "$OUT"
CACHE=$(cd "$CACHE" && pwd)
exec 9>"$CACHE/.lock"
flock 9 # one builder at a time; a second caller waits and then finds everything cached

log() { printf 'k8s-bins: %s\n' "$*" >&2; }

# Progress of the source build: which binary, and the elapsed time every 30 s.
T0=$(date +%s)
ticker=
progress_stop() {
  if [[ -n "$ticker" ]]; then
    kill "$ticker" 2>/dev/null || true
    wait "$ticker" 2>/dev/null || true
    ticker=
  fi
}
progress_start() {
  progress_stop
  local label=$1 start
  start=$(date +%s)
  log "building $label from source"
  (
    exec 9>&- # the ticker must not hold the cache lock
    while sleep 30 </dev/null >/dev/null 2>&1; do
      kill -0 $$ 2>/dev/null || exit 0
      now=$(date +%s)
      log "still building $label: $((now - start))s for this step, $((now - T0))s in all"
    done
  ) &
  ticker=$!
}
trap progress_stop EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# Binaries from KUBEBUILDER_ASSETS win over our own build.
if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  for b in kube-apiserver etcd kube-controller-manager kube-scheduler kwok; do
    if [[ -x "$KUBEBUILDER_ASSETS/$b" && ! -e "$CACHE/$b" ]]; then
      log "using $b from KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
      ln -sf "$KUBEBUILDER_ASSETS/$b" "$CACHE/$b"
    fi
  done
fi

want=()
for b in kube-apiserver kube-controller-manager kube-scheduler etcd kwok; do
  [[ -x "$CACHE/$b" ]] || want+=("$b")
done

# The release binaries first: seconds with a network, a few seconds to give up without one.
# Offline, a quick probe (curl, when present) says so at once, before compiling the
# downloader (which takes ~20 s with a cold Go build cache).
reachable() {
  command -v curl >/dev/null || return 0
  local arch url
  arch=$(go env GOARCH)
  for url in "${FLOTILLA_K8S_RELEASE_URL:-https://dl.k8s.io/release}/$K8S_VERSION/bin/linux/$arch/kube-apiserver.sha256" \
    "${FLOTILLA_ETCD_RELEASE_URL:-https://github.com/etcd-io/etcd/releases/download}/$ETCD_VERSION/SHA256SUMS"; do
    # Any HTTP answer counts (exit 0 without -f); DNS or connection failures do not.
    curl -sS -o /dev/null --connect-timeout 5 --max-time 10 "$url" 2>/dev/null && return 0
  done
  return 1
}
if ((${#want[@]})) && [[ "${FLOTILLA_K8S_DOWNLOAD:-1}" != 0 ]]; then
  if reachable; then
    log "trying the release binaries of ${want[*]} (FLOTILLA_K8S_DOWNLOAD=0 skips this)"
    (cd "$ROOT" && go run ./hack/k8sbins -dir "$CACHE" -k8s-version "$K8S_VERSION" \
      -etcd-version "$ETCD_VERSION" -kwok-version "$KWOK_VERSION" "${want[@]}") ||
      log "the downloader failed; building from source"
  else
    log "release download sites unreachable (no network?): not downloading ${want[*]}"
  fi
fi

still=()
for b in kube-apiserver kube-controller-manager kube-scheduler etcd kwok; do
  [[ -x "$CACHE/$b" ]] || still+=("$b")
done
if ((${#still[@]})); then
  if [[ "${FLOTILLA_K8S_SOURCE_BUILD:-1}" == 0 ]]; then
    log "${still[*]} missing and FLOTILLA_K8S_SOURCE_BUILD=0: not building from source"
    exit 1
  fi
  log "building ${still[*]} from source through the Go module proxy: cold, this takes about" \
    "8-50 minutes on 2 cores depending on load (progress every 30 s; cached afterwards)"
fi

missing=()
for b in kube-apiserver kube-controller-manager kube-scheduler; do
  [[ -x "$CACHE/$b" ]] || missing+=("$b")
done

if ((${#missing[@]})); then
  progress_start "${missing[*]} $K8S_VERSION"
  mod="$CACHE/build/kubernetes"
  mkdir -p "$mod"
  # k8s.io/kubernetes replaces every staging module with a local path; pin each to its
  # published version instead, reading the list from kubernetes' own go.mod.
  gomod=$(cd "$mod" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module flotilla.local/k8s-build"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    sed -n '/^replace (/,/^)/p' "$gomod" | awk '$2 == "=>" && $3 ~ /^\.\/staging/ {print "replace " $1 " => " $1 " '"$STAGING_VERSION"'"}'
  } >"$mod/go.mod"
  cat >"$mod/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
  (cd "$mod" && go mod tidy -e >/dev/null 2>&1 || true; cd "$mod" && GOFLAGS=-mod=mod go mod download)
  ver="-X k8s.io/component-base/version.gitVersion=${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
  pkgs=()
  for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  (cd "$mod" && GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w $ver" -o "$CACHE/.tmp-build/" "${pkgs[@]}")
  for b in "${missing[@]}"; do mv "$CACHE/.tmp-build/$b" "$CACHE/$b"; done
fi

if [[ ! -x "$CACHE/etcd" ]]; then
  progress_start "etcd $ETCD_VERSION"
  mod="$CACHE/build/etcd"
  mkdir -p "$mod"
  cat >"$mod/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  printf 'module flotilla.local/etcd-build\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$mod/go.mod"
  (cd "$mod" && GOFLAGS=-mod=mod go mod tidy >/dev/null && go build -trimpath -ldflags "-s -w" -o "$CACHE/.tmp-build/etcd" .)
  mv "$CACHE/.tmp-build/etcd" "$CACHE/etcd"
fi

if [[ ! -x "$CACHE/kwok" ]]; then
  progress_start "kwok $KWOK_VERSION"
  GOBIN="$CACHE/.tmp-build" GOFLAGS= go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mv "$CACHE/.tmp-build/kwok" "$CACHE/kwok"
fi

# kwok's stages: nodes become Ready and keep renewing their lease and conditions like a
# kubelet (without the heartbeat, kube-controller-manager marks them unknown after its grace
# period and every Pod goes NotReady); pods become Ready, complete and are deleted.
if ! grep -q node-heartbeat-with-lease "$CACHE/kwok-stages.yaml" 2>/dev/null; then
  src="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
  [[ -d "$src" ]] || (cd "$CACHE" && GOFLAGS=-mod=mod go mod download "sigs.k8s.io/kwok@$KWOK_VERSION")
  {
    for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
      pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
      echo "---"
      cat "$src/$f"
    done
  } >"$CACHE/kwok-stages.yaml.tmp"
  mv "$CACHE/kwok-stages.yaml.tmp" "$CACHE/kwok-stages.yaml"
fi

progress_stop
rm -rf "$CACHE/.tmp-build"
for b in kube-apiserver kube-controller-manager kube-scheduler etcd kwok kwok-stages.yaml; do
  ln -sfn "$CACHE/$b" "$OUT/$b"
done
log "ready in $OUT (cache: $CACHE)"
