"""The claims check_docs.py checks beyond names: figures and statements
that must agree with the log, with the page they cite, with the configs and
with what the commands do.

  figures    every ratio (1.91x) and percentage (70%) in README.md and
             docs/*.md appears in docs/experiments.md, the log of measured
             runs (README's status table is checked for every unit by
             check_docs.py itself).
  citations  a line that links other pages and quotes a ratio or a
             percentage quotes one that a linked page holds: a figure
             credited to benchmarks.md is in it (link the log where a figure
             is only there).
  absences   "not measured" / "not shown" / "not yet shown" about a task or a
             config: no other page gives that task or config a measured
             percentage on a line of its own.
  comments   in configs/*.yaml, a comment that states a key's value ("rl.
             grpo_group_size (8)", "rollouts_per_step 8") states the value
             the file gives it (a `--set key=value` in a comment is an
             alternative, not a claim).
  examples   the cheap example commands of README.md and docs/ run as
             written and exit 0: `rl-vla3 config ...`, `version`, `help`,
             `VERB --help`, `up CLUSTER.yaml --dry-run`, `render` (in a
             scratch folder holding the repository's configs/ and deploy/).
"""
import os
import re
import shlex
import shutil
import subprocess
import tempfile

NUM = r"\d[\d,]*(?:\.\d+)?"
RATIO_PCT = re.compile(r"(?<![\w.,])(%s(?:-%s)?)(x|%%)(?![\w%%])" % (NUM, NUM))
MD_LINK = re.compile(r"\]\(([^)\s#]*\.md)(?:#[^)\s]*)?\)")
ABSENCE = re.compile(r"\bnot (?:yet )?(?:measured|shown)\b|\bnot shown yet\b")
COMMENT_CLAIM = re.compile(
    r"(?<![\w.=-])([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)\s*(?:\(|\s)(-?\d+(?:\.\d+)?)"
    r"(?![\w.])")
CHEAP = {"config", "version", "help"}


def lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines(True)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def plain(text):
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text.replace("**", ""))
    return re.sub(r"\s+", " ", text)


def holds(text, number, unit):
    tail = "%" if unit == "%" else ""
    return re.search(r"(?<![\d.])%s%s(?!\d|\.\d)" % (re.escape(number),
                                                   re.escape(tail)),
                     text) is not None


def missing(text, figure, unit):
    whole = plain(figure)
    if holds(text, whole, unit):
        return []
    return [e for e in whole.split("-") if not holds(text, e, unit)]


def figures(checker, files, root, history_rel):
    """Ratios and percentages in every page, against the log."""
    history = plain(read(os.path.join(root, history_rel)))
    for path in files:
        name = os.path.relpath(path, root)
        for n, line in enumerate(lines(path), 1):
            for m in RATIO_PCT.finditer(line):
                checker.counts["figures"] += 1
                gone = missing(history, m.group(1), m.group(2))
                if gone:
                    checker.bad((name, n), "figure `%s`: %s not in %s (the log "
                                "of measured runs)" % (m.group(0), ", ".join(
                                    g + ("%" if m.group(2) == "%" else "")
                                    for g in gone), history_rel))


def citations(checker, files, root, history_rel):
    """A figure on a line that cites pages is in one of them."""
    cache = {}
    for path in files:
        name = os.path.relpath(path, root)
        for n, line in enumerate(lines(path), 1):
            targets = [os.path.normpath(os.path.join(os.path.dirname(path), t))
                       for t in MD_LINK.findall(line)]
            targets = [t for t in targets if os.path.isfile(t)]
            if not targets:
                continue
            for t in targets:
                if t not in cache:
                    cache[t] = plain(read(t))
            for m in RATIO_PCT.finditer(line):
                if all(missing(cache[t], m.group(1), m.group(2))
                       for t in targets):
                    checker.bad((name, n), "figure `%s` is credited to %s, "
                                "which does not hold it" % (m.group(0), ", ".join(
                                    os.path.relpath(t, root) for t in targets)))


def absences(checker, files, root, names):
    """"not measured" about a name another page measures."""
    measured = {}
    for path in files:
        for n, line in enumerate(lines(path), 1):
            if ABSENCE.search(line) or "%" not in line:
                continue
            for name in names:
                if re.search(r"(?<![\w/])%s(?![\w])" % re.escape(name), line) \
                        and RATIO_PCT.search(line):
                    measured.setdefault(name, (os.path.relpath(path, root), n))
    for path in files:
        rel = os.path.relpath(path, root)
        for n, line in enumerate(lines(path), 1):
            # The sentence (or table cell) that says it.
            for clause in re.split(r"\||(?<=[.;])\s", line):
                said = ABSENCE.search(clause)
                if not said:
                    continue
                for name in names:
                    where = measured.get(name)
                    if where and where[0] != rel and re.search(
                            r"(?<![\w/])%s(?![\w])" % re.escape(name), clause):
                        checker.bad((rel, n), "says `%s` is %s, but %s:%d "
                                    "gives it a measured figure" % (
                                        name, said.group(0), where[0],
                                        where[1]))


def flat_values(text):
    """Dotted leaf key -> value of the YAML `rl-vla3 config` prints."""
    keys, stack = {}, []
    for line in text.splitlines():
        m = re.match(r"^( *)([A-Za-z0-9_]+):(.*)$", line)
        if not m:
            continue
        del stack[len(m.group(1)) // 2:]
        value = m.group(3).split("  #")[0].strip()
        if value and not value.startswith("#"):
            keys[".".join(stack + [m.group(2)])] = value
        else:
            stack.append(m.group(2))
    return keys


def comments(checker, root, binary):
    """A config comment's stated value of a key is the file's."""
    import glob
    for path in sorted(glob.glob(os.path.join(root, "configs", "*.yaml"))):
        out = subprocess.run([binary, "config", "--keys-only", "--config", path],
                             capture_output=True, text=True).stdout
        values = flat_values(out)
        rel = os.path.relpath(path, root)
        for n, line in enumerate(lines(path), 1):
            if "#" not in line:
                continue
            text = line[line.index("#"):]
            for m in COMMENT_CLAIM.finditer(text):
                name, said = m.group(1), m.group(2)
                if "_" not in name and "." not in name:
                    continue  # a plain word: not a key's name
                keys = [k for k in values if k == name or k.endswith("." + name)]
                if len(keys) != 1:
                    continue
                checker.counts["comments"] += 1
                try:
                    same = float(values[keys[0]]) == float(said)
                except ValueError:
                    same = False
                if not same:
                    checker.bad((rel, n), "the comment says %s %s; the file "
                                "gives %s = %s" % (name, said, keys[0],
                                                   values[keys[0]]))


class Examples:
    """Runs the cheap example commands in a scratch folder."""

    def __init__(self, root, binary):
        self.root, self.binary = root, os.path.abspath(binary)
        self.dir = tempfile.mkdtemp(prefix="check_docs_")
        for d in ("configs", "deploy", "docs", "tests", "scripts"):
            os.symlink(os.path.join(root, d), os.path.join(self.dir, d))
        self.ran = 0

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def cheap(self, tokens):
        verb = tokens[0] if tokens else ""
        if any(re.match(r"^[A-Z][A-Z_]*\.\w+$", t) for t in tokens):
            return False  # CLUSTER.yaml: the reader's own file
        if "--help" in tokens or verb in ("version", "help"):
            return True
        if verb == "up" and "--dry-run" in tokens and "--local" not in tokens:
            return True
        if verb == "config":
            # A command naming a run's outputs (runs/...) needs that run first.
            return not any("runs/" in t or t.startswith("runs") for t in tokens)
        return False

    def run(self, checker, where, tokens):
        """tokens: from the verb on, placeholders already excluded."""
        if not self.cheap(tokens):
            return
        self.ran += 1
        p = subprocess.run([self.binary] + tokens, cwd=self.dir,
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
            checker.bad(where, "`rl-vla3 %s` exits %d: %s" % (
                " ".join(shlex.quote(t) for t in tokens), p.returncode, last))
