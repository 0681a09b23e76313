#!/usr/bin/env python3
"""Holds lib/, p4runtime/ and tools/ to the size rule of docs/architecture.md
("Small pieces"): every file in lib/ and p4runtime/ under 450 lines and every
function there under 80; every file in tools/ under 300 lines, and every tool's `main`
(tools/*.cc) under 60.

A function is a brace block whose head (the text since the previous `;`,
`{` or `}`) has a parameter list and does not start with a control keyword,
`namespace`, `class`, `struct`, `enum` or `=`; its length runs from the
head's first line to the closing brace. Lambdas and local classes count as
part of the function around them. Comments, strings and preprocessor lines
are blanked first, so braces in them do not count. Exit status 1 lists every
file and function over the limit.

  scripts/check_sizes.py [SOURCE_DIR]
"""
import os
import re
import sys

MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 80
MAX_TOOL_MAIN_LINES = 60
MAX_TOOL_FILE_LINES = 300
NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "namespace", "class", "struct",
                 "enum", "union", "do", "else", "return", "try", "extern"}


def blank(text):
    """The text with comments, literals and preprocessor lines as spaces
    (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and text[i:].lstrip(" \t").startswith("#"):
            j = i
            while True:  # a directive runs on over backslash-newlines
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and text[k - 1] == "\\" and k < n:
                    j = k + 1
                    continue
                break
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
            continue
        at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
        if c == "\n" or (out and out[-1].endswith("\n")):
            at_line_start = True
    return "".join(out)


def long_functions(text, limit):
    """(first line, lines, head) of every function longer than `limit`."""
    t = blank(text)
    found, stack, head_start = [], [], 0
    for i, c in enumerate(t):
        if c == "{":
            head = t[head_start:i]
            words = head.split()
            flat = " ".join(words)
            is_function = (")" in flat and words and words[0].split("(")[0] not in NOT_FUNCTIONS
                           and "=" not in flat.split("(")[0] and not flat.startswith(","))
            inside = any(f for _, f in stack)
            first = head_start + (len(head) - len(head.lstrip()))
            stack.append((first, is_function and not inside))
            head_start = i + 1
        elif c == "}":
            if stack:
                first, is_function = stack.pop()
                if is_function:
                    start_line = t.count("\n", 0, first) + 1
                    lines = t.count("\n", 0, i) + 1 - start_line + 1
                    if lines > limit:
                        name = " ".join(t[first:t.find("(", first)].split())
                        found.append((start_line, lines, name))
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = []
    # The libraries: lib/, and the P4Runtime client beside it.
    walked = [w for d in ("lib", "p4runtime") for w in os.walk(os.path.join(root, d))]
    for dirpath, _, files in walked:
        for name in sorted(files):
            if not name.endswith((".h", ".cc")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            lines = text.count("\n")
            if lines >= MAX_FILE_LINES:
                problems.append(f"{rel}: {lines} lines (a file stays under {MAX_FILE_LINES})")
            for line, length, fn in long_functions(text, MAX_FUNCTION_LINES - 1):
                problems.append(f"{rel}:{line}: {fn} is {length} lines "
                                f"(a function stays under {MAX_FUNCTION_LINES})")
    tools = os.path.join(root, "tools")
    for name in sorted(os.listdir(tools)) if os.path.isdir(tools) else []:
        if not name.endswith((".cc", ".h")):
            continue
        path = os.path.join(tools, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.count("\n")
        if lines >= MAX_TOOL_FILE_LINES:
            problems.append(f"tools/{name}: {lines} lines (a file stays under {MAX_TOOL_FILE_LINES})")
        if not name.endswith(".cc"):
            continue
        for line, length, fn in long_functions(text, MAX_TOOL_MAIN_LINES - 1):
            if fn.split()[-1] == "main":
                problems.append(f"tools/{name}:{line}: main is {length} lines "
                                f"(a tool's main stays under {MAX_TOOL_MAIN_LINES})")
    for p in problems:
        print(p)
    if problems:
        print(f"sizes: {len(problems)} over the rule of docs/architecture.md (\"Small pieces\")")
        return 1
    print(f"sizes: every file in lib/ and p4runtime/ under {MAX_FILE_LINES} lines, every "
          f"function there under {MAX_FUNCTION_LINES}, every file in tools/ under {MAX_TOOL_FILE_LINES}, every "
          f"tool's main under {MAX_TOOL_MAIN_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
