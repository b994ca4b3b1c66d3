#!/usr/bin/env python3
"""render-chart.py: renders charts/fairshare the way `helm template` does,
for machines without helm (Debian has no helm package). It implements only
the part of Go's text/template and of Helm's functions that the chart
uses, and refuses anything else with a message naming the template and
the construct, so that a template edit that needs more fails `make test`
instead of rendering wrongly.

The subset:
  {{ .Values.a.b }}  {{ .Release.Name }}  {{ .Release.Namespace }}
  {{ .Chart.Name }}  {{ .Chart.Version }}  {{ .Chart.AppVersion }}
  "string" and integer literals
  pipelines of: quote, default X, not, toYaml, indent N, nindent N,
  sha256sum, deepCopy, set MAP "key" VALUE (sets the key in MAP, returns MAP)
  {{ $v := PIPELINE }} declares a variable, read as $v or $v.a.b; it lives
      until the end of the if or else branch that declares it (Go's scopes);
      no plain assignment ($v = ...) and no $ (the root)
  {{ if PIPELINE }} ... {{ else }} ... {{ end }}   (Helm's truth: false,
      0, "", nil, empty list and empty map are false)
  {{- and -}} trim the white space before and after the action, as Go does
  {{/* comments */}}
A missing value is an error (helm would print nothing: a typo would pass).
CRDs come from the chart's crds/ folder (a link to the project's crds/),
unrendered, as Helm installs them; --include-crds prints them first, as
`helm template --include-crds` does.

Usage:
  render-chart.py CHART [-f VALUES.yaml]... [--set a.b=VALUE]...
                  [--namespace NS] [--name RELEASE] [--include-crds]
                  [--output-dir DIR | --print-value KEY]
--set parses VALUE as YAML (true, 3, "x"). --output-dir writes each
template's output to DIR/<template file name> (empty outputs are not
written) instead of one stream on stdout.
Needs python3 and python3-yaml (Debian packages).
"""
import copy
import hashlib
import os
import re
import sys

import yaml

MAX_FILE = 1 << 20      # a template or values file over 1 MiB is refused
MAX_NEST = 32           # if-blocks nested deeper are refused
MAX_VARS = 256          # more variables in one template are refused
VAR = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*")
DECL = re.compile(r"(\$[A-Za-z_][A-Za-z0-9_]*)\s*:=\s*(\S.*)", re.S)


class RenderError(Exception):
    pass


def load_yaml_file(path):
    with open(path, encoding="utf-8") as f:
        text = f.read(MAX_FILE + 1)
    if len(text) > MAX_FILE:
        raise RenderError("%s: over %d bytes" % (path, MAX_FILE))
    return yaml.safe_load(text)


def merge(base, over):
    """Helm's values merge: maps merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merge(base.get(k), v) if k in base else v
        return out
    return over


def truth(v):
    if v is None or v is False:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v != 0
    if isinstance(v, (str, list, dict)):
        return len(v) > 0
    return True


def to_yaml(v):
    if v is None:
        return "null"
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True,
                          allow_unicode=True, width=1000).rstrip("\n")


def fmt(v):
    """Go's printing of a value in a template: maps and lists as YAML
    would be wrong, so they are refused (use toYaml)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        raise RenderError("a map or list printed without toYaml")
    if v is None:
        return ""
    return str(v)


TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\S+')


class Template:
    def __init__(self, name, text, ctx):
        self.name, self.text, self.ctx = name, text, ctx
        self.scopes = [{}]  # variables, one map per open if/else branch
        self.nvars = 0

    def fail(self, msg):
        raise RenderError("%s: %s" % (self.name, msg))

    def lookup(self, ref):
        parts = ref.split(".")[1:]
        if not parts or parts[0] not in ("Values", "Release", "Chart"):
            self.fail("unsupported reference %s (only .Values, .Release, .Chart)" % ref)
        v = self.ctx
        for i, p in enumerate(parts):
            if not isinstance(v, dict) or p not in v:
                self.fail("no value %s" % ".".join(["", *parts[:i + 1]]))
            v = v[p]
        return v

    def variable(self, ref):
        """$name or $name.a.b: a declared variable, then its keys."""
        m = VAR.match(ref)
        if not m:
            self.fail("unsupported variable %s (only $name, declared with :=)" % ref)
        name, rest = m.group(0), ref[m.end():]
        for scope in reversed(self.scopes):
            if name in scope:
                v = scope[name]
                break
        else:
            self.fail("undefined variable %s" % name)
        if rest and not rest.startswith("."):
            self.fail("unsupported variable reference %s" % ref)
        parts = rest.split(".")[1:] if rest else []
        for i, p in enumerate(parts):
            if not isinstance(v, dict) or p not in v:
                self.fail("no value %s" % ".".join([name, *parts[:i + 1]]))
            v = v[p]
        return v

    def declare(self, name, value):
        self.nvars += 1
        if self.nvars > MAX_VARS:
            self.fail("over %d variables" % MAX_VARS)
        self.scopes[-1][name] = value

    def operand(self, tok):
        if tok.startswith('"'):
            return yaml.safe_load(tok)  # a JSON-style string literal
        if re.fullmatch(r"-?[0-9]+", tok):
            return int(tok)
        if tok in ("true", "false"):
            return tok == "true"
        if tok.startswith("."):
            return self.lookup(tok)
        if tok.startswith("$"):
            return self.variable(tok)
        self.fail("unsupported operand %r" % tok)

    def pipeline(self, expr):
        v, first = None, True
        for cmd in expr.split("|"):
            toks = TOKEN.findall(cmd)
            if not toks:
                self.fail("empty command in %r" % expr)
            fn, args = toks[0], toks[1:]
            if fn[:1] in (".", '"', "$") or fn in ("true", "false") or \
                    re.fullmatch(r"-?[0-9]+", fn):
                if not first or args:
                    self.fail("unsupported pipeline %r" % expr)
                v = self.operand(fn)
            else:
                vals = [self.operand(a) for a in args]
                if not first:
                    vals.append(v)
                v = self.call(fn, vals, expr)
            first = False
        return v

    def call(self, fn, a, expr):
        def want(n):
            if len(a) != n:
                self.fail("%s takes %d argument(s) in %r" % (fn, n, expr))
        if fn == "quote":
            want(1)
            return '"%s"' % fmt(a[0]).replace("\\", "\\\\").replace('"', '\\"')
        if fn == "default":
            want(2)
            return a[1] if truth(a[1]) else a[0]
        if fn == "toYaml":
            want(1)
            return to_yaml(a[0])
        if fn in ("indent", "nindent"):
            want(2)
            pad = " " * int(a[0])
            body = "\n".join(pad + line if line else line
                             for line in fmt(a[1]).split("\n"))
            return ("\n" if fn == "nindent" else "") + body
        if fn == "not":
            want(1)
            return not truth(a[0])
        if fn == "sha256sum":
            want(1)
            return hashlib.sha256(fmt(a[0]).encode()).hexdigest()
        if fn == "deepCopy":
            want(1)
            return copy.deepcopy(a[0])
        if fn == "set":
            want(3)
            if not isinstance(a[0], dict) or not isinstance(a[1], str):
                self.fail("set wants a map and a string key in %r" % expr)
            a[0][a[1]] = a[2]
            return a[0]
        self.fail("unsupported function %r in %r" % (fn, expr))

    def tokens(self):
        """(kind, value) pairs: ("text", s) and ("action", s), with
        the trim markers applied to the neighbouring text."""
        out, pos, text = [], 0, self.text
        while True:
            i = text.find("{{", pos)
            if i < 0:
                out.append(["text", text[pos:]])
                return out
            j = text.find("}}", i)
            if j < 0:
                self.fail("unclosed {{ at offset %d" % i)
            lead = text[pos:i]
            inner = text[i + 2:j]
            if inner.startswith("- "):
                lead = lead.rstrip(" \t\r\n")
                inner = inner[2:]
            trim_after = inner.endswith(" -")
            if trim_after:
                inner = inner[:-2]
            out.append(["text", lead])
            out.append(["action", inner.strip()])
            pos = j + 2
            if trim_after:
                while pos < len(text) and text[pos] in " \t\r\n":
                    pos += 1

    def render(self):
        out, stack = [], []  # stack of [active, taken, parent_active]
        active = True
        for kind, val in self.tokens():
            if kind == "text":
                if active:
                    out.append(val)
                continue
            if val.startswith("/*"):
                if not val.endswith("*/"):
                    self.fail("unclosed comment")
                continue
            word = val.split(None, 1)[0] if val else ""
            if word == "if":
                if len(stack) >= MAX_NEST:
                    self.fail("if-blocks nested over %d deep" % MAX_NEST)
                cond = truth(self.pipeline(val[2:])) if active else False
                stack.append([active, cond])
                self.scopes.append({})
                active = active and cond
            elif word == "else":
                if not stack or val != "else":
                    self.fail("unsupported or stray %r" % val)
                parent, taken = stack[-1]
                active = parent and not taken
                stack[-1][1] = True
                self.scopes[-1] = {}
            elif word == "end":
                if not stack:
                    self.fail("stray end")
                active = stack.pop()[0]
                self.scopes.pop()
            elif word in ("with", "range", "define", "include", "template", "block", "tpl",
                          "else if"):
                self.fail("unsupported action %r" % val)
            elif DECL.fullmatch(val):
                if active:
                    m = DECL.fullmatch(val)
                    self.declare(m.group(1), self.pipeline(m.group(2)))
            elif re.match(r"\$\S*\s*=", val):
                self.fail("unsupported action %r (only $name := PIPELINE)" % val)
            else:
                if active:
                    out.append(fmt(self.pipeline(val)))
        if stack:
            self.fail("missing end")
        return "".join(out)


def render_values(chart, values_files, sets):
    meta = load_yaml_file(os.path.join(chart, "Chart.yaml"))
    values = load_yaml_file(os.path.join(chart, "values.yaml")) or {}
    for f in values_files:
        values = merge(values, load_yaml_file(f) or {})
    for s in sets:
        key, sep, raw = s.partition("=")
        if not sep or not key:
            raise RenderError("--set %s: want KEY=VALUE" % s)
        over = yaml.safe_load(raw) if raw else ""
        for p in reversed(key.split(".")):
            over = {p: over}
        values = merge(values, over)
    return None, meta, values


def render_chart(chart, values_files, sets, namespace, release, include_crds):
    _, meta, values = render_values(chart, values_files, sets)
    ctx = {
        "Values": values,
        "Release": {"Name": release, "Namespace": namespace, "Service": "Helm"},
        "Chart": {"Name": meta["name"], "Version": meta["version"],
                  "AppVersion": meta.get("appVersion", "")},
    }
    docs = []
    if include_crds:
        crddir = os.path.join(chart, "crds")
        for f in sorted(os.listdir(crddir)):
            if os.path.splitext(f)[1].lower() in (".yaml", ".yml", ".json"):
                with open(os.path.join(crddir, f), encoding="utf-8") as fh:
                    docs.append(("crds/" + f, fh.read()))
    tdir = os.path.join(chart, "templates")
    for f in sorted(os.listdir(tdir)):
        if f.startswith("_") or os.path.splitext(f)[1] not in (".yaml", ".yml"):
            continue
        with open(os.path.join(tdir, f), encoding="utf-8") as fh:
            text = fh.read(MAX_FILE + 1)
        if len(text) > MAX_FILE:
            raise RenderError("templates/%s: over %d bytes" % (f, MAX_FILE))
        name = "templates/" + f
        out = Template(name, text, ctx).render()
        # Every rendered document must be YAML (helm checks the same).
        try:
            list(yaml.safe_load_all(out))
        except yaml.YAMLError as e:
            raise RenderError("%s: the output is not YAML: %s" % (name, e))
        docs.append((name, out))
    return meta["name"], docs


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="Render a Helm chart (a subset; see the source).")
    ap.add_argument("chart")
    ap.add_argument("-f", "--values", action="append", default=[])
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--namespace", default="default")
    ap.add_argument("--name", default="release-name")
    ap.add_argument("--include-crds", action="store_true")
    ap.add_argument("--output-dir")
    ap.add_argument("--print-value", metavar="KEY",
                    help="print the merged value KEY (a.b) as YAML, render nothing")
    a = ap.parse_args(argv)
    if a.print_value:
        try:
            _, _, ctx = render_values(a.chart, a.values, a.set)
            v = Template("--print-value", "", {"Values": ctx}).lookup(".Values." + a.print_value)
        except (RenderError, OSError, yaml.YAMLError) as e:
            print("render-chart: %s" % e, file=sys.stderr)
            return 1
        print(to_yaml(v))
        return 0
    try:
        chart, docs = render_chart(a.chart, a.values, a.set, a.namespace, a.name, a.include_crds)
    except (RenderError, OSError, yaml.YAMLError, KeyError) as e:
        print("render-chart: %s" % e, file=sys.stderr)
        return 1
    for name, out in docs:
        body = out.strip("\n")
        if not body or all(not l.strip() or l.lstrip().startswith("#") for l in body.split("\n")):
            continue  # nothing but comments: helm leaves such a file out
        if a.output_dir:
            with open(os.path.join(a.output_dir, os.path.basename(name)), "w",
                      encoding="utf-8") as fh:
                fh.write(body + "\n")
        else:
            if not body.startswith("---"):
                sys.stdout.write("---\n")
            sys.stdout.write("# Source: %s/%s\n%s\n" % (chart, name, body))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
