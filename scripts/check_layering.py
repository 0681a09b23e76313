#!/usr/bin/env python3
"""Checks every #include in lib/, include/grid/ and examples/ against the
layering table in docs/architecture.md (section "Layers and folders").

The table is the one copy of the rule: each row names a layer, what it owns
(folders under lib/, public headers under include/grid/) and the layers it may
include. A file may include its own layer's headers, those of the layers its
row lists, and those of the layer named base (the export macros); public headers include only public headers; examples and
bindings/ include only public headers (they are what a user writes). Exit status 1 lists every
include that breaks the table.

  scripts/check_layering.py [SOURCE_DIR]
"""
import os
import re
import sys

TABLE_HEADER = re.compile(r"^\|\s*layer\s*\|\s*owns\s*\|\s*may include\s*\|")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE = (".h", ".cc")


def parse_table(doc_path):
    """Returns ({owned path: layer}, {layer: set of allowed layers})."""
    owner, allowed = {}, {}
    with open(doc_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if TABLE_HEADER.match(l)), None)
    if start is None:
        sys.exit(f"{doc_path}: no '| layer | owns | may include |' table")
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3:
            sys.exit(f"{doc_path}: table row has {len(cells)} cells: {line}")
        layer = cells[0].strip("`")
        for path in re.findall(r"`([^`]+)`", cells[1]):
            owner[path] = layer
        allowed[layer] = set(re.findall(r"`([^`]+)`", cells[2]))
    for layer, deps in allowed.items():
        unknown = deps - allowed.keys()
        if unknown:
            sys.exit(f"{doc_path}: layer {layer} may include unknown layers {sorted(unknown)}")
    return owner, allowed


def layer_of_file(rel, owner):
    """The layer that owns a file of the tree (lib/X/..., include/grid/X.h)."""
    if rel.startswith("include/"):
        return owner.get(rel[len("include/"):])
    parts = rel.split("/")
    if parts[0] == "lib" and len(parts) > 2:
        return owner.get("lib/" + parts[1])
    return None


def layer_of_include(path, root, owner):
    """(layer, public?) of an include path, or None for third-party headers."""
    if path.startswith("grid/"):
        return owner.get(path, "?"), True
    first = path.split("/")[0]
    if "/" in path and os.path.isdir(os.path.join(root, "lib", first)):
        return owner.get("lib/" + first, "?"), False
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    owner, allowed = parse_table(os.path.join(root, "docs", "architecture.md"))
    errors = []
    for top in ("lib", "include/grid", "examples", "bindings"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCE):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                # The bindings, like the examples, are what a user could write.
                is_example = rel.startswith(("examples/", "bindings/"))
                is_public = rel.startswith("include/")
                layer = None if is_example else layer_of_file(rel, owner)
                if not is_example and layer is None:
                    errors.append(f"{rel}: no layer of docs/architecture.md owns it")
                    continue
                with open(os.path.join(root, rel), encoding="utf-8") as f:
                    text = f.read()
                for match in INCLUDE.finditer(text):
                    path = match.group(1)
                    line = text.count("\n", 0, match.start()) + 1
                    target = layer_of_include(path, root, owner)
                    if target is None:
                        continue
                    to_layer, public = target
                    where = f"{rel}:{line}: includes \"{path}\""
                    if to_layer == "?":
                        errors.append(f"{where}, which no layer owns")
                    elif (is_public or is_example) and not public:
                        errors.append(f"{where}, an internal header "
                                      f"({'examples' if is_example else 'public headers'} "
                                      "include only include/grid/)")
                    elif (not is_example and to_layer not in (layer, "base")
                          and to_layer not in allowed[layer]):
                        may = ", ".join(sorted(allowed[layer])) or "nothing"
                        errors.append(f"{where} (layer {to_layer}); layer {layer} may include: {may}")
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} include(s) break the layering table in docs/architecture.md")
        return 1
    print("layering: every include in lib/, include/grid/, examples/ and bindings/ keeps the table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
