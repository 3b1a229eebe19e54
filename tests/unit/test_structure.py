#!/usr/bin/env python3
"""The house rules the compiler cannot see (docs/ARCHITECTURE.md,
"Conventions for contributors"): only src/runtime/ calls OpenCL or sees the
device's inside, and no source file grows past 550 lines.
Usage: test_structure.py SOURCE_ROOT"""
import pathlib
import re
import sys

LIMIT = 550
# An OpenCL API call: cl + an upper-case letter + '(' (clt_ and CL_ never match).
CL_CALL = re.compile(r"\bcl[A-Z][A-Za-z0-9]*\s*\(")
PRIVATE = re.compile(r'#\s*include\s*"runtime/device_impl\.h"')
# Files outside runtime/ allowed to call OpenCL, each with why (none today).
EXCEPTIONS = {}


def code_of(text):
    """The text without comments and string literals (line breaks kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def main():
    root = pathlib.Path(sys.argv[1])
    problems = []
    sources = [p for d in ("src", "tools", "kernels", "bench", "fuzz") for p in (root / d).rglob("*")
               if p.suffix in (".c", ".h", ".cl")]
    if not sources:
        print(f"no sources under {root}")
        return 1
    for path in sorted(sources):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.count("\n")
        if lines > LIMIT:
            problems.append(f"{rel}: {lines} lines (at most {LIMIT}: split it along a seam)")
        if rel.startswith("src/runtime/") or path.suffix == ".cl":
            continue
        code = code_of(text)
        if PRIVATE.search(text):
            problems.append(f"{rel}: includes runtime/device_impl.h, which is runtime's alone")
        if rel in EXCEPTIONS:
            continue
        for m in CL_CALL.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            problems.append(f"{rel}:{line}: calls OpenCL ({m.group(0)[:-1].strip()}); use runtime/ (queue.h, launch.h)")
    for p in problems:
        print(p)
    print(f"{len(sources)} files checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
