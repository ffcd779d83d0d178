#!/usr/bin/env bash
# Builds the kubectl plugin's release archives and writes the krew
# manifest that names them: hack/krew-manifest.sh VERSION [BASE_URL].
#
# Each archive (kubectl-panorama_<os>_<arch>.tar.gz, in bin/krew/, which
# git ignores) holds kubectl-panorama, its completion hook and the
# repository's LICENSE (krew-index wants one in every archive); the
# manifest's uri is BASE_URL/<archive> (default: the GitHub release of
# VERSION) and its sha256 the archive's, so plugins/krew/panorama.yaml is
# what a release uploads to krew-index.
set -euo pipefail

version="${1:?usage: hack/krew-manifest.sh VERSION [BASE_URL]}"
# krew takes a semantic version with a leading v; the check also keeps
# the version from being read as sed's script below.
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
if [[ ! "${version}" =~ ${semver} ]]; then
	echo "hack/krew-manifest.sh: VERSION ${version@Q} is not a semantic version such as v1.2.3" >&2
	exit 2
fi
base="${2:-https://github.com/panorama-io/panorama/releases/download/${version}}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dist="${root}/bin/krew"
manifest="${root}/plugins/krew/panorama.yaml"
if [[ ! -f "${root}/LICENSE" ]]; then
	echo "hack/krew-manifest.sh: no LICENSE at the repository's root to ship in the archives" >&2
	exit 1
fi
mkdir -p "${dist}"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

platforms=()
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
	os="${target%/*}" arch="${target#*/}"
	files="${work}/${os}_${arch}"
	mkdir "${files}"
	CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" go build -trimpath -o "${files}/kubectl-panorama" "${root}/cmd/panorama"
	cp "${root}/plugins/kubectl_complete-panorama" "${root}/LICENSE" "${files}/"
	archive="kubectl-panorama_${os}_${arch}.tar.gz"
	tar -C "${files}" -czf "${dist}/${archive}" .
	sha="$(sha256sum "${dist}/${archive}" | cut -d' ' -f1)"
	platforms+=("  - selector:
      matchLabels:
        os: ${os}
        arch: ${arch}
    uri: ${base}/${archive}
    sha256: ${sha}
    bin: kubectl-panorama
    files:
    - from: kubectl-panorama
      to: .
    - from: kubectl_complete-panorama
      to: .
    - from: LICENSE
      to: .")
done

{
	sed -n '1,/^  platforms:$/p' "${manifest}" | sed "s/^  version: .*/  version: ${version}/"
	printf '%s\n' "${platforms[@]}"
} > "${work}/panorama.yaml"
mv "${work}/panorama.yaml" "${manifest}"
echo "wrote ${manifest} for ${version}; upload bin/krew/*.tar.gz to ${base}/"
