#!/usr/bin/env python3
"""Fails when a test's expected-output regex in a CMakeLists.txt holds a bare semicolon.

CMake reads PASS_REGULAR_EXPRESSION (and FAIL_, and the CLI helper's PASS / FAIL) as a list:
"a; b" is the two regexes "a" and " b", and ctest passes a test when any one of them matches, so
everything after the first part checks nothing. Write a semicolon as [;] (CMake does not split
a list inside square brackets). Usage: regex_semicolons_test.py SOURCE_DIR
"""
import pathlib
import re
import sys

PATTERN = re.compile(r'\b((?:PASS|FAIL)(?:_REGULAR_EXPRESSION)?)\s+"((?:[^"\\]|\\.)*)"')


def bare_semicolon(text):
    depth = 0
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif char == ";" and depth == 0:
            return True
    return False


def main():
    root = pathlib.Path(sys.argv[1])
    found = []
    for path in sorted(root.glob("tests/**/CMakeLists.txt")):
        source = path.read_text()
        for match in PATTERN.finditer(source):
            if bare_semicolon(match.group(2)):
                line = source.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(root)}:{line}: {match.group(1)} "
                             f"\"{match.group(2)[:70]}...\" has a bare ';' (write [;])")
    for message in found:
        print(message)
    print(f"{len(found)} regexes with a bare semicolon")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
