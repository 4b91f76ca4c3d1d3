"""iam-check.py TEMPLATE: refuse wildcard IAM grants in a CloudFormation/SAM template.

Run by scripts/template-check.sh with the cfn-lint venv's Python (it parses the template with cfn-lint's
own decoder, so !Ref, !Sub and friends are understood). cfn-lint alone does not flag an Allow of "*".

Rules, for every policy statement anywhere in the template (roles, bucket and queue policies, SAM
inline policies):
  - no Action or Resource that is exactly "*", in Allow or Deny statements (except the Resource of a KMS
    key policy's statement, where "*" means the key itself and is the only form KMS accepts);
  - an Allow statement names its actions: no "service:*" wildcard, no NotAction, no NotResource.
A Deny statement may use "service:*" (a TLS-only bucket policy must deny every S3 action).
Exit status 1 with one line per finding, 0 when clean.
"""

import sys

from cfnlint.decode import decode


def as_list(value):
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [value]


def statements(node, path):
    """Yields (path, statement) for every IAM statement under node."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Statement":
                for i, st in enumerate(as_list(value)):
                    if isinstance(st, dict):
                        yield f"{path}/Statement/{i}", st
            else:
                yield from statements(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from statements(value, f"{path}/{i}")


def check(template):
    findings = []
    for path, st in statements(template.get("Resources", {}), "Resources"):
        effect = st.get("Effect")
        for key in ("Action", "Resource"):
            for v in as_list(st.get(key)):
                if v == "*" and not (key == "Resource" and "/KeyPolicy/" in path):
                    findings.append(f"{path}: {key} is \"*\"")
        if effect == "Allow":
            for key in ("NotAction", "NotResource"):
                if key in st:
                    findings.append(f"{path}: Allow with {key}")
            for v in as_list(st.get("Action")):
                if isinstance(v, str) and v.endswith(":*"):
                    findings.append(f"{path}: Allow of every action of a service ({v})")
    return findings


def main():
    if len(sys.argv) != 2:
        print("usage: iam-check.py TEMPLATE", file=sys.stderr)
        return 2
    template, matches = decode(sys.argv[1])
    if matches or template is None:
        for m in matches:
            print(f"iam-check: cannot parse {sys.argv[1]}: {m}", file=sys.stderr)
        return 1
    findings = check(template)
    for f in findings:
        print(f"iam-check: {sys.argv[1]}: {f}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
