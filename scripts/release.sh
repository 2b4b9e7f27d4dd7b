#!/usr/bin/env bash
# scripts/release.sh VERSION [OUTDIR]: the release archives of the checked-out
# commit, in OUTDIR (default dist/):
#   threadline_VERSION_linux_amd64.tar.gz   threadline, threadline-sandbox,
#   threadline_VERSION_linux_arm64.tar.gz   threadline-mcp, README.md, LICENSE
#   threadline_VERSION_linux_ARCH.sbom.cdx.json   the archive's SBOM
#   SHA256SUMS                              of all of the above
# The binaries are static (CGO_ENABLED=0), built with -trimpath and the
# version stamped where `threadline version` reads it (main.version).
# Reproducible: the same commit, a clean work tree and the same Go give
# byte-identical archives (entries sorted, mtimes the commit's time, owner
# 0:0, gzip without name or time). A dirty tree is stamped so (vcs.modified).
#
# The SBOM (CycloneDX 1.6 JSON) is made by cyclonedx-gomod v1.10.0
# (installed into a temporary GOBIN with `go install module@version`, go.mod
# untouched, and run with the platform's GOOS and GOARCH, which its package
# URLs name) from each binary's embedded build information (`bin` mode: the
# modules actually linked, not all of go.mod); the three binaries' SBOMs are
# merged into one per archive: threadline is its main component, the other
# two binaries are components of it.
#
# THREADLINE_RELEASE_PLATFORMS limits the platforms (default "linux/amd64
# linux/arm64"), e.g. for a quick check: scripts/releasetest.
set -euo pipefail

version=${1:?usage: scripts/release.sh VERSION [OUTDIR]}
case $version in
-* | *[!A-Za-z0-9._+-]*) echo "release.sh: bad version $version" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/dist}
platforms=${THREADLINE_RELEASE_PLATFORMS:-linux/amd64 linux/arm64}
cyclonedx=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
commands=(threadline threadline-sandbox threadline-mcp)

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
epoch=$(git log -1 --format=%ct)
# Nothing from the caller's environment changes the build; the commit is
# stamped (vcs.revision, vcs.modified), for threadline version.
export GOFLAGS=-buildvcs=true GOWORK=off CGO_ENABLED=0 GOAMD64=v1 GOARM64=v8.0

# merge: one SBOM from the binaries' SBOMs (the first is the archive's).
mkdir "$work/merge"
cat > "$work/merge/main.go" <<'EOF'
// Command merge writes to stdout one CycloneDX SBOM made of the ones named:
// the first's metadata, the others' main components as components (with
// their binary's hashes), every module once, the dependencies merged.
package main

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
)

type obj = map[string]any

func main() {
	var base obj
	comps := map[string]any{}
	deps := map[string][]string{}
	for i, name := range os.Args[1:] {
		data, err := os.ReadFile(name)
		if err != nil {
			panic(err)
		}
		var b obj
		if err := json.Unmarshal(data, &b); err != nil {
			panic(err)
		}
		if i == 0 {
			base = b
		} else {
			meta := b["metadata"].(obj)
			main := meta["component"].(obj)
			main["properties"] = meta["properties"]
			comps[main["bom-ref"].(string)] = main
		}
		for _, c := range asList(b["components"]) {
			comps[c.(obj)["bom-ref"].(string)] = c
		}
		for _, d := range asList(b["dependencies"]) {
			ref := d.(obj)["ref"].(string)
			for _, on := range asList(d.(obj)["dependsOn"]) {
				if !slices.Contains(deps[ref], on.(string)) {
					deps[ref] = append(deps[ref], on.(string))
				}
			}
			if _, ok := deps[ref]; !ok {
				deps[ref] = []string{}
			}
		}
	}
	base["components"] = sorted(comps)
	var ds []any
	for _, ref := range keys(deps) {
		sort.Strings(deps[ref])
		ds = append(ds, obj{"ref": ref, "dependsOn": deps[ref]})
	}
	base["dependencies"] = ds
	delete(base, "compositions") // they described the first binary alone
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(base); err != nil {
		panic(err)
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

func keys[V any](m map[string]V) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

func sorted(m map[string]any) []any {
	var l []any
	for _, k := range keys(m) {
		l = append(l, m[k])
	}
	return l
}
EOF

GOBIN=$work/bin go install "$cyclonedx"

files=()
for platform in $platforms; do
	goos=${platform%/*} goarch=${platform#*/}
	name=threadline_${version}_${goos}_${goarch}
	stage=$work/$name
	mkdir -p "$stage"
	for cmd in "${commands[@]}"; do
		ldflags="-s -w"
		[[ $cmd == threadline ]] && ldflags+=" -X main.version=$version"
		GOOS=$goos GOARCH=$goarch go build -trimpath -tags goolm -ldflags "$ldflags" -o "$stage/$cmd" "./cmd/$cmd"
		(cd "$work" && GOOS=$goos GOARCH=$goarch "$work/bin/cyclonedx-gomod" bin -json -noserial -notimestamp -version "$version" \
			-output "$work/$name.$cmd.cdx.json" "$stage/$cmd")
	done
	cp README.md LICENSE "$stage/"
	chmod 0755 "$stage" "${commands[@]/#/$stage/}"
	chmod 0644 "$stage/README.md" "$stage/LICENSE"
	sboms=()
	for cmd in "${commands[@]}"; do sboms+=("$work/$name.$cmd.cdx.json"); done
	(cd "$work/merge" && go run main.go "${sboms[@]}") > "$out/$name.sbom.cdx.json"
	tar -C "$work" --sort=name --format=gnu --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
		-cf - "$name" | gzip -9 -n > "$out/$name.tar.gz"
	files+=("$name.tar.gz" "$name.sbom.cdx.json")
done
(cd "$out" && sha256sum "${files[@]}" > SHA256SUMS)
echo "release.sh: $version in $out:"
(cd "$out" && ls -l SHA256SUMS "${files[@]}")
