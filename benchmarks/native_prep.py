"""Prepare native-routing data: MetaTool split by tool, sitecare queries, and cached SmolLM2
hidden states at layers 12, 18 and 24 (bench-out/native). Then run native_eval.py.
"""

import json
import time
from pathlib import Path

from maitred.lab.domains.sitecare.generate import generate_messages
from maitred.native.backbone import Backbone
from maitred.native.data import sample, skill_text, split_by_tool
from maitred.native.states import save_states
from maitred.recall.evaluate import Query, load_queries
from maitred.skills.catalog import load_catalog

OUT = Path("bench-out/native")
LAYERS = (12, 18, 24)


def write(path, qs):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps({"id": q.id, "text": q.text, "gold": list(q.gold)}) + "\n" for q in qs)
    )


cat = load_catalog("bench-out/metatool/tools.jsonl")
qs = load_queries("bench-out/metatool/dev.jsonl") + load_queries("bench-out/metatool/test.jsonl")
sides = split_by_tool(qs, cat.names)
for side, items in sides.items():
    write(OUT / f"metatool/{side}-all.jsonl", items)
sets = {
    "train": sample(sides["train"], 500, seed=1),
    "val": sample(sides["val"], 80, seed=2),
    "test": sample(sides["test"], 250, seed=3),
}
for side, items in sets.items():
    write(OUT / f"metatool/{side}.jsonl", items)
print({k: len(v) for k, v in sides.items()}, {k: len(v) for k, v in sets.items()}, flush=True)
sc = load_catalog("src/maitred/lab/domains/sitecare/skills")
msgs = [m for m in generate_messages(2000, 50, seed=7) if m["gold"]]
seen = set()
sq = []
for m in msgs:
    if m["text"] not in seen:
        seen.add(m["text"])
        sq.append(Query(m["id"], m["text"], (m["gold"],)))
sq = sample(sq, 150, seed=4)
write(OUT / "sitecare/queries.jsonl", sq)
print("sitecare", len(sq), flush=True)
bb = Backbone.load(layer=24)
jobs = [
    ("metatool/tools", [skill_text(s) for s in cat], list(cat.names), 64),
    ("metatool/test", [q.text for q in sets["test"]], [q.id for q in sets["test"]], 64),
    ("metatool/train", [q.text for q in sets["train"]], [q.id for q in sets["train"]], 64),
    ("metatool/val", [q.text for q in sets["val"]], [q.id for q in sets["val"]], 64),
    ("sitecare/skills", [skill_text(s) for s in sc], list(sc.names), 128),
    ("sitecare/queries", [q.text for q in sq], [q.id for q in sq], 64),
]
for name, texts, keys, mt in jobs:
    t = time.time()
    got = bb.states_at(texts, LAYERS, max_tokens=mt, batch_size=16)
    for la in LAYERS:
        save_states(
            OUT / f"states/{name}-L{la}.npz",
            got[la],
            backbone_id=bb.backbone_id,
            layer=la,
            keys=keys,
        )
    print(
        name,
        len(texts),
        sum(len(a) for a in got[24]),
        "tokens",
        round(time.time() - t, 1),
        "s",
        flush=True,
    )
