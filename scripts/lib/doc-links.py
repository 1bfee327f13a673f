#!/usr/bin/env python3
"""Checks that every relative link in the given Markdown files resolves.

A link `[text](path)` or `[text](path#anchor)` names a file or directory
that exists, relative to the file it is in; its anchor, and a bare
`(#anchor)`, names a heading of the Markdown file it points at, spelled
as GitHub spells heading anchors. Links to other sites (`https:`,
`mailto:`) are not followed. Code (fenced blocks and `inline code`) holds
no links. Prints each broken link as FILE:LINE and exits 1 if any.
"""

import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(path):
    """Yields (line number, text) of the lines outside fenced code, with
    inline code removed."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                yield number, re.sub(r"`[^`]*`", "", line)


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation
    other than `-` and `_` dropped, spaces as `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


anchors_of = {}


def anchors(path):
    if path not in anchors_of:
        seen = {}
        inside = False
        found = set()
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    inside = not inside
                    continue
                match = None if inside else HEADING.match(line)
                if match:
                    base = slug(match.group(2))
                    count = seen.get(base, 0)
                    seen[base] = count + 1
                    found.add(base if count == 0 else f"{base}-{count}")
        anchors_of[path] = found
    return anchors_of[path]


def main(files):
    broken = []
    for path in files:
        for number, line in prose_lines(path):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue
                file, _, anchor = target.partition("#")
                aimed = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
                if not os.path.exists(aimed):
                    broken.append(f"{path}:{number}: {target}: no such file")
                elif anchor and aimed.endswith(".md") and anchor not in anchors(aimed):
                    broken.append(f"{path}:{number}: {target}: {aimed} has no heading #{anchor}")
    for line in broken:
        print(line, file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
