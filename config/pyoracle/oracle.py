# Answers one JSON request per line with one JSON reply per line, using only Python's standard
# library: tomllib and json are the reference readers of YAGA policies and receipts.
import datetime
import hashlib
import json
import re
import sys
import tomllib


def tag(v):
    if v is None:
        return ["null", None]
    if isinstance(v, bool):
        return ["bool", v]
    if isinstance(v, int):
        return ["int", hex(v)]
    if isinstance(v, float):
        return ["float", repr(v)]
    if isinstance(v, str):
        return ["str", v]
    if isinstance(v, dict):
        return ["table", [[k, tag(x)] for k, x in v.items()]]
    if isinstance(v, list):
        return ["array", [tag(x) for x in v]]
    if isinstance(v, datetime.datetime):
        return ["datetime", v.isoformat()]
    if isinstance(v, datetime.date):
        return ["date", v.isoformat()]
    if isinstance(v, datetime.time):
        return ["time", v.isoformat()]
    return ["?", repr(v)]


def strict_pairs(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError("duplicate key")
        out[k] = v
    return out


def no_constant(name):
    raise ValueError("constant " + name)


NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")


def plan(doc, pyproject):
    """The plan digest of a policy, following the YAGA rules in the reference note; None when
    the policy is not valid."""
    root = doc
    if pyproject:
        root = root.get("tool", {})
        root = root.get("yaga") if isinstance(root, dict) else None
        if not isinstance(root, dict):
            return None
    ar = root.get("agent-review")
    if not isinstance(ar, dict) or set(ar) - {"version", "required", "aggregation", "agents"}:
        return None
    version = ar.get("version")
    if type(version) is not int or version != 1:
        return None
    aggregation = ar.get("aggregation", "all-required")
    if aggregation not in ("all-required", "any-required"):
        return None
    agents = ar.get("agents")
    if not isinstance(agents, dict) or not agents or len(agents) > 32:
        return None
    lenses = []
    for name, lens in agents.items():
        if not NAME.fullmatch(name) or not isinstance(lens, dict):
            return None
        if set(lens) - {"preset", "instruction", "outcome", "publication"}:
            return None
        preset, instruction = lens.get("preset"), lens.get("instruction")
        if not isinstance(preset, str) or not NAME.fullmatch(preset):
            return None
        if not isinstance(instruction, str) or not instruction.strip():
            return None
        if "\0" in instruction or len(instruction.encode("utf-8")) > 4096:
            return None
        outcome = lens.get("outcome", "review")
        publication = lens.get("publication", "review")
        if outcome not in ("review", "advisory") or publication not in ("comment", "inline", "reaction", "review", "check"):
            return None
        lenses.append({"name": name, "preset": preset, "instruction": instruction, "outcome": outcome, "publication": publication})
    required = ar.get("required", [])
    if not isinstance(required, list) or not required or len(required) > 32:
        return None
    names = [l["name"] for l in lenses]
    seen = set()
    for r in required:
        if not isinstance(r, str) or not NAME.fullmatch(r) or r in seen or r not in names:
            return None
        seen.add(r)
        if lenses[names.index(r)]["outcome"] != "review":
            return None
    for l in lenses:
        l["required"] = l["name"] in seen
    body = {"version": version, "aggregation": aggregation, "lenses": lenses}
    data = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def answer(req):
    op = req["op"]
    if op == "toml":
        try:
            doc = tomllib.loads(req["doc"])
        except tomllib.TOMLDecodeError as e:
            return {"ok": False, "class": "toml", "error": str(e)}
        except ValueError as e:
            return {"ok": False, "class": "value", "error": str(e)}
        out = {"ok": True, "value": tag(doc)}
        if req.get("plan"):
            out["digest"] = plan(doc, req.get("pyproject", False))
        return out
    if op == "json":
        # The decoder runs under Python's default recursion limit, as in YAGA; the oracle's own
        # tagging and encoding of a deep document get more room.
        sys.setrecursionlimit(DEFAULT_LIMIT)
        try:
            doc = json.loads(req["doc"], object_pairs_hook=strict_pairs, parse_constant=no_constant)
        except RecursionError:
            return {"ok": False, "class": "recursion", "error": "too deep"}
        except ValueError as e:
            return {"ok": False, "class": "value", "error": str(e)}
        finally:
            sys.setrecursionlimit(DEEP_LIMIT)
        return {"ok": True, "value": tag(doc)}
    if op == "lower":
        return {"ok": True, "value": [s.lower() for s in req["strings"]]}
    if op == "lower-all":
        # Every code point whose lower-case form is not itself, and Python's Unicode version.
        import unicodedata
        changed = {}
        for cp in range(0x110000):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            c = chr(cp)
            if c.lower() != c:
                changed[str(cp)] = c.lower()
        unassigned = [cp for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Cn"]
        return {"ok": True, "value": changed, "unassigned": unassigned, "unicode": unicodedata.unidata_version}
    return {"ok": False, "class": "request", "error": "unknown op " + op}


DEFAULT_LIMIT = sys.getrecursionlimit()
DEEP_LIMIT = 20000
sys.setrecursionlimit(DEEP_LIMIT)
for line in sys.stdin:
    sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
    sys.stdout.flush()
