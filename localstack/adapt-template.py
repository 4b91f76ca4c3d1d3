"""Adapts a built template.yaml to LocalStack 2026.3.0's CloudFormation (localstack/deploy.sh runs it
with the SAM CLI's Python). Each change is listed in localstack/README.md ("What LocalStack covers").

- A Number parameter that keys a !FindInMap (FunctionTimeout, RetentionDays) becomes a String with the
  same AllowedValues: LocalStack's engine looks the mapping up with the int where AWS uses the string,
  and fails ("sequence item 1: expected str instance, int found").
- A mapping keyed by such a parameter gets a placeholder entry (a copy of its first) for each allowed
  value it lacks: LocalStack resolves the !FindInMap in the branch of an !If that the condition does not
  take (RetentionDays 0 keeps objects forever and never reads ObjectExpirationByRetentionDays), where AWS
  does not. The placeholder is never used: AWS would fail on a missing key in a branch it takes.
"""

import sys

from samcli.yamlhelper import yaml_dump, yaml_parse


def map_keys(v, keys):
    """Collects (parameter, mapping) for each Fn::FindInMap keyed by a parameter."""
    if isinstance(v, dict):
        fim = v.get("Fn::FindInMap")
        if isinstance(fim, list) and len(fim) > 1 and isinstance(fim[1], dict) and "Ref" in fim[1]:
            keys.add((fim[1]["Ref"], fim[0]))
        for x in v.values():
            map_keys(x, keys)
    elif isinstance(v, list):
        for x in v:
            map_keys(x, keys)


def main(path):
    with open(path) as f:
        t = yaml_parse(f.read())
    keys = set()
    map_keys(t.get("Resources", {}), keys)
    for k, mapping in sorted(keys):
        p = t.get("Parameters", {}).get(k)
        m = t.get("Mappings", {}).get(mapping)
        if p and isinstance(m, dict) and m and "AllowedValues" in p:
            first = next(iter(m.values()))
            for a in p["AllowedValues"]:
                if str(a) not in m:
                    m[str(a)] = dict(first)
                    print("adapt-template: mapping %s: placeholder for %s=%s" % (mapping, k, a), file=sys.stderr)
        if p and p.get("Type") == "Number":
            p["Type"] = "String"
            if "Default" in p:
                p["Default"] = str(p["Default"])
            if "AllowedValues" in p:
                p["AllowedValues"] = [str(a) for a in p["AllowedValues"]]
            for bound in ("MinValue", "MaxValue"):
                p.pop(bound, None)
            print("adapt-template: parameter %s: Number -> String (a !FindInMap key)" % k, file=sys.stderr)
    with open(path, "w") as f:
        f.write(yaml_dump(t))


if __name__ == "__main__":
    main(sys.argv[1])
