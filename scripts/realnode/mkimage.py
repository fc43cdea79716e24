#!/usr/bin/env python3
"""mkimage.py OUT.tar NAME:TAG ENTRYPOINT_JSON ITEM...

Writes a one-layer image in the `docker save` format (what `ctr images import` reads), for the
real node's pause and test-pod images: no registry is reachable here. Each ITEM is one of
  SRC=DEST      a file copied from SRC to DEST, mode 0755
  DEST->TARGET  a symbolic link
  DIR/          an empty directory
Every entry has mtime 0 and uid 0, so the same inputs give the same image digest."""
import hashlib
import io
import json
import sys
import tarfile

out, ref, entrypoint, *items = sys.argv[1:]
layer = io.BytesIO()
made = set()
with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:

    def add(name, kind, mode=0o755, data=b"", link=""):
        info = tarfile.TarInfo(name.strip("/"))
        info.type, info.mode, info.mtime, info.linkname, info.size = kind, mode, 0, link, len(data)
        tar.addfile(info, io.BytesIO(data) if data else None)

    def parents(path):
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in made:
                made.add(d)
                add(d, tarfile.DIRTYPE)

    for item in items:
        if "->" in item:
            dest, target = item.split("->", 1)
            parents(dest)
            add(dest, tarfile.SYMTYPE, 0o777, link=target)
        elif item.endswith("/"):
            parents(item + "x")
        else:
            src, dest = item.split("=", 1)
            parents(dest)
            with open(src, "rb") as f:
                add(dest, tarfile.REGTYPE, data=f.read())

blob = layer.getvalue()
diff_id = "sha256:" + hashlib.sha256(blob).hexdigest()
config = json.dumps(
    {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {
            "Entrypoint": json.loads(entrypoint),
            "WorkingDir": "/",
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "scripts/realnode/mkimage.py"}],
    },
    sort_keys=True,
).encode()
config_name = hashlib.sha256(config).hexdigest() + ".json"
layer_name = diff_id[len("sha256:"):] + "/layer.tar"
manifest = json.dumps([{"Config": config_name, "RepoTags": [ref], "Layers": [layer_name]}]).encode()
with tarfile.open(out, "w") as tar:
    for name, data in ((layer_name, blob), (config_name, config), ("manifest.json", manifest)):
        info = tarfile.TarInfo(name)
        info.size, info.mtime = len(data), 0
        tar.addfile(info, io.BytesIO(data))
print(f"{out}: {ref}, one layer {diff_id} ({len(blob)} bytes)")
