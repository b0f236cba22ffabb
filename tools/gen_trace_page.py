#!/usr/bin/env python3
"""Generates the replay page's text in depeng.h from tools/trace_page.html.

dp_trace_write_html (DEPENG_TRACE_HTML) writes the page in two parts around
the trace's data: dp__html_head, the page up to its data, and dp__html_tail,
the page after it. tools/trace_page.html is that page, with the line
@@DEPENG_TRACE_DATA@@ where the data goes. This script rewrites the block of
depeng.h between the lines

    /* BEGIN GENERATED from tools/trace_page.html ...
    /* END GENERATED from tools/trace_page.html */

as two arrays of string literals, one per line of the page (a line longer
than LIMIT characters is cut into several), so every literal stays far below
the 4095 characters C guarantees (-pedantic warns past it).

    tools/gen_trace_page.py [--check] [HEADER [PAGE]]

--check: writes nothing; exits 1 when HEADER's block is not what PAGE makes.
HEADER defaults to depeng.h, PAGE to tools/trace_page.html (beside this
script's directory).
"""
import os
import sys

MARKER = '@@DEPENG_TRACE_DATA@@'
BEGIN = '/* BEGIN GENERATED from tools/trace_page.html'
END = '/* END GENERATED from tools/trace_page.html */'
LIMIT = 1000   # page characters per literal: at most 2 x LIMIT + 2 after escaping


def literal(text):
    """text as the body of a C string literal: only printable ASCII, tab and
    newline are accepted; "??" is split so no trigraph can form."""
    out = []
    for c in text:
        if c == '\\':
            out.append('\\\\')
        elif c == '"':
            out.append('\\"')
        elif c == '\n':
            out.append('\\n')
        elif c == '\t':
            out.append('\\t')
        elif c == '?' and out and out[-1] == '?':
            out.append('\\?')
        elif ' ' <= c <= '~':
            out.append(c)
        else:
            raise ValueError('character %r: the page must be ASCII (use an HTML entity or a \\u escape in the script)' % c)
    return ''.join(out)


def array(name, comment, text):
    lines = ['/* %s */' % comment, 'static const char *const %s[] = {' % name]
    for line in text.splitlines(True):
        for k in range(0, len(line), LIMIT):
            lines.append('    "%s",' % literal(line[k:k + LIMIT]))
    lines += ['    NULL', '};']
    return lines


def block(page):
    if page.count(MARKER + '\n') != 1:
        raise ValueError('the page needs the line %s exactly once' % MARKER)
    head, tail = page.split(MARKER + '\n')
    if not head.endswith('\n') or not tail.endswith('\n'):
        raise ValueError('the page must end with a newline, and the marker must be a line of its own')
    lines = [BEGIN + ' by tools/gen_trace_page.py',
             '   (make trace-page): edit the page there, not these lines. */']
    lines += array('dp__html_head', 'The page up to its data: markup and style.', head)
    lines += array('dp__html_tail', 'The page after its data: the replay script, which puts user text on the\n'
                   '   page only through textContent, never as markup.', tail)
    lines.append(END)
    return '\n'.join(lines) + '\n'


def main(argv):
    check = '--check' in argv
    args = [a for a in argv if a != '--check']
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    header = args[0] if len(args) > 0 else os.path.join(root, 'depeng.h')
    page_path = args[1] if len(args) > 1 else os.path.join(root, 'tools', 'trace_page.html')
    with open(page_path, encoding='ascii', newline='') as f:
        page = f.read()
    with open(header, encoding='utf-8', newline='') as f:
        text = f.read()
    b = text.find(BEGIN)
    e = text.find(END)
    if b < 0 or e < b or text.count(BEGIN) != 1:
        sys.stderr.write('%s: no single %s ... %s block\n' % (header, BEGIN, END))
        return 2
    e += len(END) + 1                                   # the end line and its newline
    try:
        new = block(page)
    except ValueError as err:
        sys.stderr.write('%s: %s\n' % (page_path, err))
        return 2
    if text[b:e] == new:
        return 0
    if check:
        sys.stderr.write('%s: the trace page block differs from %s (run make trace-page)\n' % (header, page_path))
        return 1
    with open(header, 'w', encoding='utf-8', newline='') as f:
        f.write(text[:b] + new + text[e:])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
