"""iam-check.py TEMPLATE: refuse wildcard IAM grants in a CloudFormation/SAM template.

Run by scripts/template-check.sh with the cfn-lint venv's Python (it parses the template with cfn-lint's
own decoder, so !Ref, !Sub and friends are understood). cfn-lint alone does not flag an Allow of "*".

Rules, for every policy statement anywhere in the template (roles, bucket and queue policies, SAM
inline policies):
  - no Action or Resource that is exactly "*", in Allow or Deny statements (except the Resource of a KMS
    key policy's statement, where "*" means the key itself and is the only form KMS accepts);
  - an Allow statement names its actions: no "service:*" wildcard, no NotAction, no NotResource.
A Deny statement may use "service:*" (a TLS-only bucket policy must deny every S3 action).

And, for the roles of the functions (issue 18, item 9: the public function can rewrite no run):
  - the role of a function behind a public Function URL (AuthType NONE) writes nothing of the table (only
    dynamodb:GetItem, BatchGetItem and Query), puts objects only under skein/inbox/ and deletes none, sends
    to queues (sqs:SendMessage) and nothing else of SQS, and of KMS may only kms:Decrypt;
  - every role's dynamodb:DeleteItem carries a dynamodb:LeadingKeys condition (the partitions it may delete in);
  - no role reads or writes objects of the whole bucket ("<bucket>/*"): each names a prefix.
Statements under !If are checked in both branches.

Exit status 1 with one line per finding, 0 when clean.

iam-check.py --must-refuse FIXTURE: the check of a template it must refuse (the old roles, in
scripts/testdata/iam-old-roles.yaml): exit 0 only when every finding an "# expect: TEXT" line of the fixture
names is among its findings (TEXT is a substring of one), 1 otherwise.
"""

import sys

from cfnlint.decode import decode


def as_list(value):
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [value]


def branches(st):
    """Yields the statements an entry of a Statement list stands for: itself, or both branches of an !If."""
    if isinstance(st, dict) and list(st.keys()) == ["Fn::If"]:
        args = st["Fn::If"]
        if isinstance(args, list) and len(args) == 3:
            for b in args[1:]:
                yield from branches(b)
        return
    if isinstance(st, dict) and "Ref" not in st:
        yield st


def statements(node, path):
    """Yields (path, statement) for every IAM statement under node."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Statement":
                for i, entry in enumerate(as_list(value)):
                    for st in branches(entry):
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


# What the role of a public function (a Function URL with AuthType NONE) may do, by service; an action of
# another service than these is refused too.
PUBLIC_ALLOWED = {
    "dynamodb": {"dynamodb:getitem", "dynamodb:batchgetitem", "dynamodb:query"},
    "s3": {"s3:getobject", "s3:listbucket", "s3:putobject"},  # PutObject: under skein/inbox/ only
    "sqs": {"sqs:sendmessage"},
    "kms": {"kms:decrypt"},
    "logs": {"logs:createlogstream", "logs:putlogevents"},
}
INBOX_SUFFIX = "/skein/inbox/*"
OBJECT_ACTIONS = {"s3:getobject", "s3:putobject", "s3:deleteobject", "s3:getobjectversion", "s3:deleteobjectversion"}


def text(node):
    """A policy value as text: a Sub's template, ${X.Arn} for a GetAtt, ${X} for a Ref; each branch of an If."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict) and len(node) == 1:
        (key, value), = node.items()
        if key == "Fn::Sub":
            return [value[0] if isinstance(value, list) else value]
        if key == "Fn::GetAtt":
            return ["${" + (".".join(value) if isinstance(value, list) else value) + "}"]
        if key == "Ref":
            return ["${" + str(value) + "}"]
        if key == "Fn::If" and isinstance(value, list) and len(value) == 3:
            return text(value[1]) + text(value[2])
    if isinstance(node, list):
        return [t for v in node for t in text(v)]
    return [str(node)]


def role_of(props):
    """The logical ID of the role a function's Role property names with !GetAtt ROLE.Arn, or None."""
    role = props.get("Role")
    if isinstance(role, dict) and "Fn::GetAtt" in role:
        att = role["Fn::GetAtt"]
        parts = att if isinstance(att, list) else str(att).split(".")
        if len(parts) == 2 and parts[1] == "Arn":
            return parts[0]
    return None


def public_roles(resources):
    """The roles of the functions behind a public Function URL (AuthType NONE)."""
    out = set()
    for res in resources.values():
        if not isinstance(res, dict) or res.get("Type") not in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
            continue
        props = res.get("Properties") or {}
        url = props.get("FunctionUrlConfig") or {}
        if url.get("AuthType") == "NONE" and role_of(props):
            out.add(role_of(props))
    for res in resources.values():
        if isinstance(res, dict) and res.get("Type") == "AWS::Lambda::Url":
            props = res.get("Properties") or {}
            target = props.get("TargetFunctionArn")
            if props.get("AuthType") == "NONE" and isinstance(target, dict) and "Fn::GetAtt" in target:
                fn = resources.get(target["Fn::GetAtt"][0]) or {}
                r = role_of(fn.get("Properties") or {})
                if r:
                    out.add(r)
    return out


def has_leading_keys(st):
    """Whether a statement is conditioned on dynamodb:LeadingKeys, with no value that is only "*"."""
    for op, conds in (st.get("Condition") or {}).items():
        if not isinstance(conds, dict):
            continue
        for key, values in conds.items():
            if key.lower() == "dynamodb:leadingkeys" and op.startswith("ForAllValues:"):
                return all(v != "*" for v in text(values))
    return False


def check_roles(template):
    """The rules on the functions' roles (see the module's doc)."""
    findings = []
    resources = template.get("Resources", {}) or {}
    public = public_roles(resources)
    for name, res in resources.items():
        if not isinstance(res, dict) or res.get("Type") != "AWS::IAM::Role":
            continue
        for path, st in statements((res.get("Properties") or {}).get("Policies", []), name):
            if st.get("Effect") != "Allow":
                continue
            actions = [a.lower() for a in as_list(st.get("Action")) if isinstance(a, str)]
            resources_text = text(st.get("Resource"))
            for act in actions:
                service = act.split(":", 1)[0]
                if act == "dynamodb:deleteitem" and not has_leading_keys(st):
                    findings.append(f"{name}: dynamodb:DeleteItem without a dynamodb:LeadingKeys condition")
                if act in OBJECT_ACTIONS:
                    for r in resources_text:
                        if r.endswith("}/*") and "${DataBucket" in r:
                            findings.append(f"{name}: {act_name(act)} on the whole bucket ({r}): name a prefix")
                if name not in public:
                    continue
                if act not in PUBLIC_ALLOWED.get(service, set()):
                    what = {"dynamodb": "write the table", "s3": "write or delete objects", "sqs": "use the queue beyond sending"}
                    findings.append(f"{name}: a public function's role may not {what.get(service, 'use')} ({act_name(act)})")
                elif act == "s3:putobject":
                    for r in resources_text:
                        if not r.endswith(INBOX_SUFFIX):
                            findings.append(f"{name}: a public function's role may write objects only under skein/inbox/ (s3:PutObject on {r})")
    return findings


def act_name(act):
    """service:action with the action's usual capitals (dynamodb:deleteitem -> dynamodb:DeleteItem)."""
    known = {
        "getitem": "GetItem", "batchgetitem": "BatchGetItem", "putitem": "PutItem", "updateitem": "UpdateItem",
        "deleteitem": "DeleteItem", "query": "Query", "conditioncheckitem": "ConditionCheckItem",
        "batchwriteitem": "BatchWriteItem", "getobject": "GetObject", "putobject": "PutObject",
        "deleteobject": "DeleteObject", "sendmessage": "SendMessage", "receivemessage": "ReceiveMessage",
        "deletemessage": "DeleteMessage", "generatedatakey": "GenerateDataKey", "decrypt": "Decrypt",
    }
    service, _, action = act.partition(":")
    return f"{service}:{known.get(action, action)}"


def load(path):
    template, matches = decode(path)
    if matches or template is None:
        for m in matches:
            print(f"iam-check: cannot parse {path}: {m}", file=sys.stderr)
        return None
    return template


def must_refuse(path):
    """--must-refuse: every "# expect:" finding of the fixture is reported."""
    template = load(path)
    if template is None:
        return 1
    with open(path, encoding="utf-8") as f:
        expected = [line.split("expect:", 1)[1].strip() for line in f if line.startswith("# expect:")]
    if not expected:
        print(f"iam-check: {path} names no expected finding (# expect: lines)", file=sys.stderr)
        return 1
    findings = check(template) + check_roles(template)
    missing = [e for e in expected if not any(e in f for f in findings)]
    for e in missing:
        print(f"iam-check: {path}: the check did not refuse: {e}")
    if not missing:
        print(f"iam-check: {path}: refused as expected ({len(expected)} findings)")
    return 1 if missing else 0


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--must-refuse":
        return must_refuse(args[1])
    if len(args) != 1:
        print("usage: iam-check.py TEMPLATE | iam-check.py --must-refuse FIXTURE", file=sys.stderr)
        return 2
    template = load(args[0])
    if template is None:
        return 1
    findings = check(template) + check_roles(template)
    for f in findings:
        print(f"iam-check: {args[0]}: {f}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
