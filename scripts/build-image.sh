#!/usr/bin/env bash
# scripts/build-image.sh VERSION [RELEASEDIR]: a container image of a release
# (localhost/threadline:VERSION, or $THREADLINE_IMAGE), built with buildah
# from the release archive without network and without a base image: FROM
# scratch, the three static binaries, this host's CA bundle (TLS to Slack,
# Matrix and the model APIs), configs/container.yaml as
# /etc/threadline/config.yaml and the user threadline (10001) owning the
# volume /var/lib/threadline. It runs `serve` as configs/Containerfile's
# image does, but has no Node.js, no git and no agent CLI: configs/Containerfile
# builds that one where its base images and npm can be pulled; layer your
# agent CLIs on this one, or run the agents in project containers (LXD).
#
# RELEASEDIR is scripts/release.sh's output holding the archive for this
# machine's architecture, checked against its SHA256SUMS; without it the
# release is built first. The image is dated at the commit (buildah commit
# --timestamp) and checked at the end: threadline version, run in it with
# buildah's chroot isolation (podman run needs a runtime that may set
# rlimits; on some VMs crun may not).
#   apt-get install buildah    (Debian; storage: overlay, else set vfs in
#                               /etc/containers/storage.conf)
set -euo pipefail

version=${1:?usage: scripts/build-image.sh VERSION [RELEASEDIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
image=${THREADLINE_IMAGE:-localhost/threadline:$version}
arch=$(go env GOARCH)
name=threadline_${version}_linux_${arch}
uid=10001
command -v buildah >/dev/null || { echo "build-image.sh: buildah is not installed (apt-get install buildah)" >&2; exit 1; }

work=$(mktemp -d)
ctr=
cleanup() {
	[[ -n $ctr ]] && buildah rm "$ctr" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

rel=${2:-}
if [[ -z $rel ]]; then
	rel=$work/release
	THREADLINE_RELEASE_PLATFORMS=linux/$arch "$root/scripts/release.sh" "$version" "$rel" >/dev/null
fi
(cd "$rel" && grep " $name.tar.gz\$" SHA256SUMS | sha256sum --check --quiet -)
tar -C "$work" -xzf "$rel/$name.tar.gz"
epoch=$(git -C "$root" log -1 --format=%ct)

# The image's files as two layers of tar: root's, then the volume (uid).
fs=$work/rootfs
mkdir -p "$fs/usr/local/bin" "$fs/etc/threadline" "$fs/etc/ssl/certs" "$fs/tmp" "$fs/var/lib" "$work/data/var/lib/threadline"
cp "$work/$name"/threadline* "$fs/usr/local/bin/"
cp "$root/configs/container.yaml" "$fs/etc/threadline/config.yaml"
cp /etc/ssl/certs/ca-certificates.crt "$fs/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nthreadline:x:%d:%d:threadline:/var/lib/threadline:/sbin/nologin\n' $uid $uid > "$fs/etc/passwd"
printf 'root:x:0:\nthreadline:x:%d:\n' $uid > "$fs/etc/group"
chmod -R u=rwX,go=rX "$fs" && chmod 1777 "$fs/tmp" && chmod 0700 "$work/data/var/lib/threadline"
layer() { tar -C "$1" --sort=name --format=gnu --mtime="@$epoch" --owner="$2" --group="$2" --numeric-owner -cf "$3" "${@:4}"; }
layer "$fs" 0 "$work/root.tar" .
layer "$work/data" $uid "$work/data.tar" --no-recursion ./var/lib/threadline

ctr=$(buildah from scratch)
buildah add "$ctr" "$work/root.tar" / >/dev/null
buildah add "$ctr" "$work/data.tar" / >/dev/null
buildah config --user $uid:$uid --workingdir /var/lib/threadline \
	--env XDG_DATA_HOME=/var/lib/threadline --env XDG_CONFIG_HOME=/etc --env HOME=/var/lib/threadline \
	--env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
	--volume /var/lib/threadline --port 8780 \
	--label org.opencontainers.image.title=threadline --label org.opencontainers.image.version="$version" \
	--label org.opencontainers.image.revision="$(git -C "$root" rev-parse HEAD)" \
	--entrypoint '["/usr/local/bin/threadline"]' --cmd 'serve --config /etc/threadline/config.yaml' "$ctr"
buildah commit --quiet --timestamp "$epoch" "$ctr" "$image" >/dev/null
buildah rm "$ctr" >/dev/null
ctr=

# Check: the image's threadline runs and is this release.
ctr=$(buildah from "$image")
got=$(buildah run --isolation chroot "$ctr" -- /usr/local/bin/threadline version)
[[ $got == "threadline $version "* ]] || { echo "build-image.sh: the image's threadline version says: $got" >&2; exit 1; }
echo "build-image.sh: $image ($got)"
