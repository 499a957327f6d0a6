#!/usr/bin/env python3
"""Keeps the user documentation honest: every config key, command, flag and
path that README.md and docs/*.md name must be real.

  /usr/bin/python3 scripts/check_docs.py --binary build/services/rl-vla3
  /usr/bin/python3 scripts/check_docs.py --binary B FILE.md ...   (these files only)

Checked (docs/experiments.md, the history log, is left out):
  keys      `section.key`, `section.key=value`, `section.key: value` in inline
            code, and every `--set key=value` (inline or in a code block): the
            key must be one that `rl-vla3 config` prints (the resolved config as
            YAML, flattened to dotted keys). `section.*` and `*.key` must match
            at least one key. In docs/kubernetes.md, or on a line that names
            CLUSTER.yaml, a CLUSTER.yaml key (deploy/cluster.example.yaml,
            commented keys included) is accepted too.
  values    each command's --set pairs (with its --config, when that file
            exists) are loaded together with `rl-vla3 config`; a refusal is
            reported with the binary's own message. --keys-only skips this.
  commands  `rl-vla3 VERB ...` at the start of a code-block line (or after
            &&, ;, |, env assignments) or of an inline code span: VERB must be
            listed by `rl-vla3 help` and answer `rl-vla3 VERB --help`; `serve`
            takes a role that help lists; each --flag must appear in
            `rl-vla3 VERB --help`.
  paths     scripts/, configs/, deploy/ ... paths named anywhere must exist;
            relative markdown links (and #anchors into .md files) must resolve.
  figures   in README.md's status table (the rows under "## Status"), every
            number with a unit after it (x, %, frames/s, obs/s, samples/s,
            M, MB, MiB, GiB, s, ms, min, points, updates) must appear in
            docs/experiments.md, the log of measured runs: thousands
            separators dropped on both sides, a percentage with its %, a
            ratio with or without its x (the log's tables write ratios bare),
            a range A-B as written or each end on its own. So the README
            quotes no figure the log does not hold.

Also the claims of scripts/doc_claims.py (all pages, when no FILE is
given): ratios and percentages against the log, figures against the pages
they credit, "not measured" against a page that measures it, config comments
against the config's values, and the cheap example commands run as written
(not with --keys-only).

Exit 0 with one summary line, or 1 listing each bad reference as
FILE:LINE: what and why.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

import doc_claims

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HISTORY = os.path.join("docs", "experiments.md")

# Deliberately not real: each a placeholder the reader replaces or creates.
SKIP = {
    # docs/tasks.md's worked example: the task file the reader writes.
    "configs/tasks/yellow_cube_on_plate.yaml",
}
# Top-level folders whose paths are checked when named.
REPO_DIRS = ("scripts", "configs", "deploy", "docs", "envs", "policies",
             "runtime", "services", "tests", "bench", "proto", "cmake")
# A dotted token with one of these endings is a file name, not a key.
FILE_EXTS = {"pt", "json", "jsonl", "yaml", "yml", "txt", "html", "svg", "png",
             "gif", "mp4", "log", "safetensors", "proto", "cc", "h", "py",
             "sh", "md", "csv", "xml", "so", "1", "tgz"}
KEY_TOKEN = re.compile(r"^[\w*]+(?:\.[\w*]+)+$")
PATH_RE = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*\w/?)" % "|".join(REPO_DIRS))
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")
INLINE_RE = re.compile(r"(`+)(.+?)\1")
SET_RE = re.compile(r"--set[ =]+([\w.*]+)=(\S*)")
# A figure of the README's status table: a number or a range A-B, then a unit.
NUM = r"\d[\d,]*(?:\.\d+)?"
FIGURE_RE = re.compile(
    r"(?<![\w.,])(%s(?:-%s)?)(?:(x|%%)(?![\w%%])|\s(frames/s|obs/s|samples/s|"
    r"M|MB|MiB|GiB|s|ms|min|points|updates)(?![\w/]))" % (NUM, NUM))
STATUS_HEADING = re.compile(r"^## Status\b")
PLACEHOLDER = re.compile(r"[<>|{}$]|\.\.\.|^[A-Z][A-Z_]*$")


def run(binary, args):
    try:
        p = subprocess.run([binary] + args, capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        sys.exit("check_docs: cannot run %s %s: %s" % (binary, " ".join(args), e))
    return p.returncode, p.stdout, p.stderr


def flatten_yaml(text):
    """Dotted leaf keys of the block YAML `rl-vla3 config` prints."""
    keys, stack = set(), []
    lines = text.splitlines()
    for n, line in enumerate(lines):
        m = re.match(r"^( *)([A-Za-z0-9_]+):(.*)$", line)
        if not m:
            continue
        depth = len(m.group(1)) // 2
        del stack[depth:]
        value = m.group(3).split("  #")[0].strip()
        if value.startswith("#"):
            value = ""
        # A block list below the key ("  - item") is its value too.
        following = next((l for l in lines[n + 1:] if l.strip()), "")
        if value or following.lstrip().startswith("- "):
            keys.add(".".join(stack + [m.group(2)]))
        else:
            stack.append(m.group(2))
    return keys


def cluster_keys():
    """CLUSTER.yaml keys, from deploy/cluster.example.yaml (commented ones too)
    and deploy/cluster.gpu.example.yaml; the three roles share their sub-keys
    (one parser reads them)."""
    keys = {"token_file"}
    for name in ("cluster.example.yaml", "cluster.gpu.example.yaml"):
        text = open(os.path.join(ROOT, "deploy", name)).read()
        text = re.sub(r"(?m)^(\s*)# (\s*\w+:)", r"\1\2", text)  # uncomment
        keys |= flatten_yaml(text)
    roles = ("learner", "inference", "rollout")
    subs = {k.split(".", 1)[1] for k in keys if k.split(".")[0] in roles}
    return keys | {r + "." + s for r in roles for s in subs}


class Binary:
    """What the binary offers: keys, verbs, each verb's flags."""

    def __init__(self, path):
        self.path = path
        rc, out, err = run(path, ["config"])
        if rc != 0:
            sys.exit("check_docs: `%s config` failed: %s" % (path, err.strip()))
        self.keys = flatten_yaml(out)
        self.sections = {k.split(".")[0] for k in self.keys}
        rc, out, _ = run(path, ["help"])
        self.help = out.split("verbs:", 1)[-1]
        roles = re.search(r"serve ROLE.*?\(([\w|]+)\)", self.help)
        self.roles = set(roles.group(1).split("|")) if roles else set()
        self.verb_help = {}
        self.loaded = {}

    def verb(self, name):
        """The verb's --help text, or None if help does not offer it."""
        if name not in self.verb_help:
            text = None
            if re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(name), self.help):
                rc, out, _ = run(self.path, [name, "--help"])
                if rc == 0 and (out.startswith("usage: rl-vla3 %s " % name) or
                                name == "help"):
                    text = out
            self.verb_help[name] = text
        return self.verb_help[name]

    def load(self, args):
        """'' if `rl-vla3 config ARGS` loads, else the binary's message."""
        key = tuple(args)
        if key not in self.loaded:
            rc, _, err = run(self.path, ["config", "--keys-only"] + args)
            lines = err.strip().splitlines() or ["exit %d" % rc]
            self.loaded[key] = "" if rc == 0 else lines[-1]
        return self.loaded[key]


class Checker:
    def __init__(self, binary, check_values):
        self.b = binary
        self.check_values = check_values
        self.cluster = cluster_keys()
        self.errors = []
        self.shown_error = ""
        self.examples = None  # doc_claims.Examples: run the cheap commands
        self.counts = {"keys": 0, "commands": 0, "paths": 0, "figures": 0,
                       "comments": 0}

    def bad(self, where, what):
        self.errors.append("%s:%d: %s" % (where[0], where[1], what))

    # keys -------------------------------------------------------------
    def key(self, where, key, line):
        if key in SKIP:
            return
        self.counts["keys"] += 1
        if key in self.b.keys:
            return
        if key.endswith(".*") and any(
                k.startswith(key[:-1]) for k in self.b.keys):
            return
        if key.startswith("*.") and any(
                k.endswith(key[1:]) for k in self.b.keys):
            return
        if (where[0].endswith("kubernetes.md") or "CLUSTER.yaml" in line) and \
                key in self.cluster:
            return
        self.bad(where, "config key `%s`: not a key `rl-vla3 config` prints"
                 % key)

    def key_candidates(self, where, span, line):
        """Key-like tokens of an inline code span whose first part is a
        config section (or a CLUSTER.yaml one)."""
        for tok in re.split(r"[\s,()\[\]]+", span):
            tok = re.sub(r"(=.*|:)$", "", tok.split("=")[0]).rstrip(".")
            if not KEY_TOKEN.match(tok):
                continue
            first, last = tok.split(".")[0], tok.rsplit(".", 1)[1]
            if last in FILE_EXTS:
                continue
            if first in self.b.sections or first == "*" or (
                    first in {"learner", "inference", "rollout", "storage",
                              "ports"}):
                self.key(where, tok, line)

    # commands ---------------------------------------------------------
    def command(self, where, tokens):
        """tokens: a command from its rl-vla3 word on."""
        tokens = [t.replace("\\|", "|").strip("[]") for t in tokens[1:]]
        tokens = [t for t in tokens if t]
        if not tokens or tokens[0].startswith("-") or \
                re.match(r"^([A-Z][A-Z_]*|<.*>)$", tokens[0]):
            return  # `rl-vla3 --help`, `rl-vla3 VERB --help`
        self.counts["commands"] += 1
        verbs = tokens[0].split("|")  # up|down|status
        for verb in verbs:
            if self.b.verb(verb) is None:
                self.bad(where, "`rl-vla3 %s`: not a verb `rl-vla3 help` lists"
                         % verb)
                return
        verb, text = verbs[0], self.b.verb(verbs[0])
        rest = tokens[1:]
        if verb == "serve" and rest and not rest[0].startswith("-") and \
                rest[0] != "ROLE":
            for role in rest[0].split("|"):
                if role not in self.b.roles:
                    self.bad(where, "`rl-vla3 serve %s`: not a role (%s)"
                             % (role, "|".join(sorted(self.b.roles))))
        for t in rest:
            if not t.startswith("--"):
                continue
            flag = t.split("=")[0]
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(flag), text):
                self.bad(where, "`rl-vla3 %s %s`: `rl-vla3 %s --help` has no "
                         "%s" % (verb, flag, verb, flag))
        self.values(where, rest)
        if self.examples is not None and not self.shown_error and not any(
                PLACEHOLDER.search(t) or "$" in t for t in rest):
            self.examples.run(self, where, [verb] + rest)

    def values(self, where, rest):
        pairs = [(k, v) for k, v in SET_RE.findall(" ".join(rest)) if "." in k]
        for k, _ in pairs:
            if not self.shown_error:  # a shown refusal may name a bad key
                self.key(where, k, "")
        if not self.check_values or not pairs:
            return
        if any(v and PLACEHOLDER.search(v) for _, v in pairs):
            return  # a placeholder (a path of yours): the config cannot load
        args = []
        if "--config" in rest:
            i = rest.index("--config")
            path = rest[i + 1] if i + 1 < len(rest) else ""
            if os.path.isfile(os.path.join(ROOT, path)):
                args += ["--config", os.path.join(ROOT, path)]
        for k, v in pairs:
            if (k in self.b.keys or self.shown_error) and v and \
                    not PLACEHOLDER.search(v):
                args += ["--set", "%s=%s" % (k, v)]
        if not any(a == "--set" for a in args):
            return
        msg, shown = self.b.load(args), self.shown_error
        if shown and not msg and ("--checkpoint" in rest or
                                  "--init-checkpoint" in rest):
            return  # refused against the checkpoint's record (context.json)
        if shown and not msg:
            self.bad(where, "shown refused (%s), but its config loads" % shown)
        elif shown and shown not in msg:
            self.bad(where, "shown refused with `%s`; the binary says `%s`"
                     % (shown, msg))
        elif msg and not shown:
            self.bad(where, "its --set values do not load: %s" % msg)

    def code_line(self, where, line):
        line = re.sub(r"(^|\s)#.*$", "", line)  # shell comment
        line = re.sub(r"^\$ ", "", line.strip())
        for part in re.split(r"\s(?:&&|\|\||;|\||&)\s|[;&]$", line):
            try:
                tokens = shlex.split(part)
            except ValueError:
                tokens = part.split()
            while tokens and re.match(r"^\w+=\S*$", tokens[0]):
                tokens.pop(0)  # VAR=value prefixes
            if tokens and tokens[0] in ("sudo", "time", "exec"):
                tokens.pop(0)
            if tokens and os.path.basename(tokens[0]) == "rl-vla3":
                self.command(where, tokens)
            else:
                for k, _ in SET_RE.findall(part):
                    if "." in k:
                        self.key(where, k, line)

    # paths ------------------------------------------------------------
    def paths(self, where, line, path):
        for p in PATH_RE.findall(line):
            if p in SKIP or p.rstrip("/") in SKIP:
                continue
            self.counts["paths"] += 1
            full = os.path.join(ROOT, p)
            # bench/serving_benchmark names the target built from its .cc.
            if not (os.path.exists(full) or os.path.exists(full + ".cc")):
                self.bad(where, "path `%s`: no such file in the repository" % p)
        for target in LINK_RE.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue
            self.counts["paths"] += 1
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path),
                                                 file_part)) if file_part \
                else path
            if not os.path.exists(dest):
                self.bad(where, "link `%s`: no such file" % target)
            elif anchor and dest.endswith(".md") and \
                    anchor not in anchors(dest):
                self.bad(where, "link `%s`: no heading #%s in %s"
                         % (target, anchor, os.path.relpath(dest, ROOT)))

    # a file -----------------------------------------------------------
    def file(self, path):
        name = os.path.relpath(path, ROOT) if path.startswith(ROOT) else path
        # A copy outside the repository (an old README): links as from the root.
        base = path if path.startswith(ROOT) else os.path.join(ROOT, "x.md")
        lines = open(path, encoding="utf-8").read().splitlines()
        in_code, held, start = False, "", 0
        for n, line in enumerate(lines, 1):
            where = (name, n)
            if line.lstrip().startswith("```"):
                in_code, held = not in_code, ""
                continue
            self.paths(where, line, base)
            if in_code:
                if not held:
                    start = n
                if re.sub(r"\s#.*$", "", line).rstrip().endswith("\\"):
                    held += re.sub(r"\s#.*$", "", line).rstrip()[:-1] + " "
                    continue  # a command continued on the next line
                # A command followed by its refusal: the refusal must be real.
                nxt = lines[n] if n < len(lines) else ""
                m = re.search(r"config error: (.*)$", nxt)
                self.shown_error = m.group(1).strip() if m else ""
                self.code_line((name, start), held + line)
                self.shown_error, held = "", ""
                continue
            for _, span in INLINE_RE.findall(line):
                self.inline(where, span, line)

    def inline(self, where, span, line):
        tokens = span.split()
        while tokens and re.match(r"^\w+=\S*$", tokens[0]):
            tokens.pop(0)
        if tokens and os.path.basename(tokens[0]) == "rl-vla3":
            self.command(where, span.split()[span.split().index(tokens[0]):])
        elif "--set" in span:
            for k, _ in SET_RE.findall(span):
                if "." in k:
                    self.key(where, k, line)
        else:
            self.key_candidates(where, span, line)


def slug(heading):
    s = re.sub(r"[`*_~]", lambda m: "_" if m.group(0) == "_" else "",
               heading.strip().lower())
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(md):
    out, seen = set(), {}
    in_code = False
    for line in open(md, encoding="utf-8"):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        m = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if m and not in_code:
            s = slug(m.group(1))
            out.add(s if s not in seen else "%s-%d" % (s, seen[s]))
            seen[s] = seen.get(s, 0) + 1
    return out


def plain_numbers(text):
    """text with thousands separators and bold markers dropped, whitespace
    runs as one space (a figure may wrap)."""
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text.replace("**", ""))
    return re.sub(r"\s+", " ", text)


def in_history(history, number, unit):
    """Whether NUMBER (separators dropped) appears in the log as a number,
    a percentage with its %."""
    tail = "%" if unit == "%" else ""
    return re.search(r"(?<![\d.])%s%s(?!\d|\.\d)" % (re.escape(number),
                                                   re.escape(tail)),
                     history) is not None


def status_figures(checker, readme):
    """Each figure of README.md's status table must be one the log holds."""
    history = plain_numbers(open(os.path.join(ROOT, HISTORY),
                                 encoding="utf-8").read())
    name = os.path.relpath(readme, ROOT)
    in_status, header = False, False
    for n, line in enumerate(open(readme, encoding="utf-8"), 1):
        if line.startswith("## "):
            in_status, header = bool(STATUS_HEADING.match(line)), True
            continue
        if not in_status or not line.startswith("|"):
            continue
        if header or re.match(r"^\|[-| :]+\|\s*$", line):
            header = False  # the table's header row and its rule
            continue
        for m in FIGURE_RE.finditer(line):
            figure, unit = m.group(1), m.group(2) or m.group(3)
            checker.counts["figures"] += 1
            whole = plain_numbers(figure)
            if "-" in whole and in_history(history, whole, unit):
                continue
            missing = [e + ("%" if unit == "%" else "")
                       for e in whole.split("-")
                       if not in_history(history, e, unit)]
            if missing:
                checker.bad((name, n), "figure `%s`: %s not in %s (the log of "
                            "measured runs)" % (m.group(0).strip(),
                                                ", ".join(missing), HISTORY))


def claim_names():
    """What an absence claim can be about: the built-in tasks (docs/tasks.md's
    table) and the configs."""
    names = {os.path.basename(p) for p in glob.glob(
        os.path.join(ROOT, "configs", "*.yaml"))}
    for line in open(os.path.join(ROOT, "docs", "tasks.md"), encoding="utf-8"):
        if line.startswith("| `"):
            names.update(n for n in re.findall(r"`([a-z]+(?:_[a-z]+){2,})`",
                                               line.split("|")[1]))
    return sorted(names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "services",
                                                     "rl-vla3"))
    ap.add_argument("--keys-only", action="store_true",
                    help="do not load each command's --set values")
    ap.add_argument("files", nargs="*",
                    help="markdown files (default README.md, docs/*.md "
                    "without docs/experiments.md)")
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        sys.exit("check_docs: no rl-vla3 binary at %s (build it, or pass "
                 "--binary)" % a.binary)
    files = [os.path.abspath(f) for f in a.files] or \
        [os.path.join(ROOT, "README.md")] + sorted(
            f for f in glob.glob(os.path.join(ROOT, "docs", "*.md"))
            if os.path.relpath(f, ROOT) != HISTORY)
    c = Checker(Binary(a.binary), not a.keys_only)
    if not a.keys_only:
        c.examples = doc_claims.Examples(ROOT, a.binary)
    for f in files:
        c.file(f)
        if os.path.relpath(f, ROOT) == "README.md":
            status_figures(c, f)
    if not a.files:  # the claims across pages: every page is needed
        doc_claims.figures(c, files, ROOT, HISTORY)
        doc_claims.citations(c, files, ROOT, HISTORY)
        doc_claims.absences(c, files, ROOT, claim_names())
        doc_claims.comments(c, ROOT, a.binary)
    ran = c.examples.ran if c.examples else 0
    if c.examples:
        c.examples.close()
    summary = "%d keys, %d commands (%d run), %d paths, %d figures, %d " \
        "config comments checked in %d files" % (
            c.counts["keys"], c.counts["commands"], ran, c.counts["paths"],
            c.counts["figures"], c.counts["comments"], len(files))
    for e in c.errors:
        print(e)
    if c.errors:
        print("check_docs: %d bad references (%s)" % (len(c.errors), summary))
        return 1
    print("check_docs: " + summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
