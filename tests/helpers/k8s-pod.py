#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# k8s-pod.py MANIFEST OUT NAME PROVGATE-IMAGE SERVICE-IMAGE WORK BUILD [SIDECAR=CAPS]... -- CMD...
# The committed pod manifest (hooks/k8s/pod.yaml) made runnable by podman kube play on one
# machine: its Pod kept as written (shareProcessNamespace, the provgate sidecar's command and
# securityContext), the service container replaced by CMD in SERVICE-IMAGE with the host's
# /usr, the test's build folder and WORK bound in; the sidecar gets WORK at the same path in
# place of the cluster's volumes (config map, PVCs, the kubelet's log folder). Each
# SIDECAR=CAPS adds a copy of the sidecar named SIDECAR with only CAPS (comma-separated,
# "none" for no capability) added; SIDECAR=CAPS@UID runs that copy as UID (runAsUser and
# runAsGroup). service@UID runs the service as UID (runAsUser and runAsGroup), with every
# capability dropped, as a service image with a USER line or a pod's securityContext does.
import copy
import sys

import yaml

args = sys.argv[1:]
sep = args.index("--")
manifest, out, name, pg_image, svc_image, work, build = args[:7]
extra = args[7:sep]
cmd = args[sep + 1:]

docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
pod = next(d for d in docs if d.get("kind") == "Pod")
spec = pod["spec"]
pod["metadata"]["name"] = name
pod["metadata"].pop("labels", None)
spec["restartPolicy"] = "Never"
pg = next(c for c in spec["containers"] if c["name"] == "provgate")
svc = next(c for c in spec["containers"] if c["name"] != "provgate")
pg["image"] = pg_image
pg.pop("env", None)  # the downward API's values name the cluster's log folder
pg["volumeMounts"] = [{"name": "work", "mountPath": work}]
svc.clear()
svc.update({
    "name": "service",
    "image": svc_image,
    "command": cmd,
    "volumeMounts": [{"name": "usr", "mountPath": "/usr", "readOnly": True},
                     {"name": "work", "mountPath": work},
                     {"name": "build", "mountPath": build, "readOnly": True}],
})
svc_uid = None
for e in extra:
    if e.startswith("service@"):
        svc_uid = int(e.split("@", 1)[1])
if svc_uid is not None:
    svc["securityContext"] = {"runAsUser": svc_uid, "runAsGroup": svc_uid,
                              "allowPrivilegeEscalation": False,
                              "capabilities": {"drop": ["ALL"]}}
for e in extra:
    if e.startswith("service@"):
        continue
    cname, caps = e.split("=", 1)
    uid = None
    if "@" in caps:
        caps, u = caps.split("@", 1)
        uid = int(u)
    c = copy.deepcopy(pg)
    c["name"] = cname
    c["securityContext"]["capabilities"]["add"] = [] if caps == "none" else caps.split(",")
    if uid is not None:
        c["securityContext"]["runAsUser"] = uid
        c["securityContext"]["runAsGroup"] = uid
    spec["containers"].append(c)
spec["volumes"] = [
    {"name": "usr", "hostPath": {"path": "/usr", "type": "Directory"}},
    {"name": "work", "hostPath": {"path": work, "type": "Directory"}},
    {"name": "build", "hostPath": {"path": build, "type": "Directory"}},
]
with open(out, "w") as f:
    yaml.safe_dump(pod, f, sort_keys=False)
