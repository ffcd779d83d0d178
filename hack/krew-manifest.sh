#!/usr/bin/env bash
# Builds the kubectl plugin's release archives and writes the krew
# manifest that names them: hack/krew-manifest.sh VERSION [BASE_URL].
#
# Each archive (kubectl-panorama_<os>_<arch>.tar.gz, in bin/krew/, which
# git ignores) holds kubectl-panorama and its completion hook; the
# manifest's uri is BASE_URL/<archive> (default: the GitHub release of
# VERSION) and its sha256 the archive's, so plugins/krew/panorama.yaml is
# what a release uploads to krew-index.
set -euo pipefail

version="${1:?usage: hack/krew-manifest.sh VERSION [BASE_URL]}"
base="${2:-https://github.com/panorama-io/panorama/releases/download/${version}}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dist="${root}/bin/krew"
manifest="${root}/plugins/krew/panorama.yaml"
mkdir -p "${dist}"

platforms=()
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
	os="${target%/*}" arch="${target#*/}"
	work="$(mktemp -d)"
	CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" go build -trimpath -o "${work}/kubectl-panorama" "${root}/cmd/panorama"
	cp "${root}/plugins/kubectl_complete-panorama" "${work}/"
	archive="kubectl-panorama_${os}_${arch}.tar.gz"
	tar -C "${work}" -czf "${dist}/${archive}" .
	rm -rf "${work}"
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
      to: .")
done

{
	sed -n '1,/^  platforms:$/p' "${manifest}" | sed "s/^  version: .*/  version: ${version}/"
	printf '%s\n' "${platforms[@]}"
} > "${manifest}.new"
mv "${manifest}.new" "${manifest}"
echo "wrote ${manifest} for ${version}; upload bin/krew/*.tar.gz to ${base}/"
