#!/usr/bin/env python3
"""The house's size rules on the project's C++ sources: no file over 500 lines,
no function over 80 (the same limit as .clang-tidy's readability-function-size,
checked here in a second, without parsing LibTorch's headers, so every test run
keeps it).

  scripts/check_sizes.py            check; exit 1 listing what is over
  scripts/check_sizes.py --list     every function over the limit, longest first

A function is a definition whose opening line starts in column 0 (clang-format
puts every namespace-level definition there) and whose body ends at the first
`}` in column 0 after it; lambdas and member functions defined in a class count
toward the function or class around them.
"""
import os
import re
import sys

ROOTS = ["runtime", "envs", "policies", "services", "bench", "tests"]
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
# A definition's first line: no leading space, not a preprocessor line,
# comment, namespace, class/struct body or a lone brace.
SKIP = re.compile(r"^(#|//|/\*|\*|namespace|}|{|class |struct |enum |union |"
                  r"template\s*<[^>]*>\s*$|using |typedef |extern \"C\"|$)")


def sources():
    for root in ROOTS:
        for dirpath, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith((".cc", ".h")):
                    yield os.path.join(dirpath, f)


def functions(lines):
    """Yields (name, first line number, length) of column-0 definitions."""
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if line[:1].isspace() or SKIP.match(line) or "(" not in line:
            i += 1
            continue
        # The signature runs to the line holding the body's `{`; a `;` first
        # means a declaration.
        j = i
        while j < n and "{" not in lines[j] and ";" not in lines[j]:
            j += 1
        if j >= n or ";" in lines[j].split("{")[0]:
            i = j + 1
            continue
        # The body ends at the next line that is `}` (or `};`) in column 0.
        k = j
        if not lines[j].rstrip().endswith("}") or lines[j].count("{") != lines[j].count("}"):
            k = j + 1
            while k < n and not re.match(r"^}", lines[k]):
                k += 1
        head = re.sub(r"\(.*", "", line).split()
        name = head[-1] if head else line.strip()
        yield name, i + 1, k - i + 1
        i = k + 1


def main():
    list_all = "--list" in sys.argv
    over = []
    for path in sources():
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) > MAX_FILE_LINES:
            over.append((len(lines), f"{path}: {len(lines)} lines (file limit {MAX_FILE_LINES})"))
        for name, start, length in functions(lines):
            if length > MAX_FUNCTION_LINES:
                over.append((length, f"{path}:{start}: {name} is {length} lines "
                                     f"(function limit {MAX_FUNCTION_LINES})"))
    over.sort(reverse=True)
    for _, msg in over:
        print(msg)
    if over and not list_all:
        print(f"check_sizes: {len(over)} over the house's limits; cut them into "
              "named pieces (docs/development.md: Code layout and style)", file=sys.stderr)
        return 1
    if not over:
        print("check_sizes: every file <= %d lines, every function <= %d"
              % (MAX_FILE_LINES, MAX_FUNCTION_LINES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
