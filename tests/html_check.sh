#!/usr/bin/env bash
# The walkthrough's replay page (dp_trace_write_html) in a real browser:
# headless Chromium opens it from a file: URL with "#selftest", where the
# page presses its own keys and buttons (End, First, Next / right arrow to
# the end, Back / left arrow to the start, Last, Home) and keeps what it
# showed after each press; the DOM is dumped and compared with the
# walkthrough's text trace: every event line, and the variables' states and
# queues and the operations' states after every step of the program. Then
# "#step=K" must show the same as stepping there, pages with hostile names
# must show them as text (nothing injected), a capped recorder's page must
# say events are missing, and a screenshot is saved as build/walkthrough.png.
# Without chromium (tests/browser_deps.sh installs it) this is a SKIP.
cd "$(dirname "$0")/.." || exit 1
if ! command -v chromium >/dev/null 2>&1; then
    echo "SKIP html replay in a browser: chromium is not installed (tests/browser_deps.sh installs it)"
    echo "html: 0 passed, 0 failed, 1 skipped"
    exit 0
fi
if ! ./build/walkthrough build/html_test.dot build/html_test.html > build/html_test.txt 2>&1 || ! ./build/html_pages build; then
    echo "FAIL html: the walkthrough or html_pages failed"; echo "html: 0 passed, 1 failed"; exit 1
fi
exec /usr/bin/python3 - "$PWD" <<'PYEOF'
import html, os, re, shutil, subprocess, sys, tempfile
root = sys.argv[1]
passed = failed = 0
def check(ok, what, detail=''):
    global passed, failed
    if ok: passed += 1; print('PASS ' + what)
    else: failed += 1; print('FAIL ' + what + (': ' + detail if detail else ''))

def chromium(url, *extra):
    """Runs headless Chromium on url with its own profile; returns stdout."""
    prof = tempfile.mkdtemp(prefix='depeng-chromium-')
    try:
        r = subprocess.run(['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                            '--user-data-dir=' + prof] + list(extra) + [url],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        return r.stdout.decode('utf-8', 'replace')
    except subprocess.TimeoutExpired:
        return ''
    finally:
        shutil.rmtree(prof, ignore_errors=True)

def pre(dom, ident):
    m = re.search(r'<pre id="%s"[^>]*>(.*?)</pre>' % ident, dom, re.S)
    return html.unescape(m.group(1)) if m else None

def parse_state(text):
    """A dp-state block as the page wrote it: caption, event, vars, ops."""
    st = {'caption': '', 'event': '', 'vars': [], 'ops': [], 'step': None}
    for line in text.split('\n'):
        if line.startswith('step '): st['step'] = line
        elif line.startswith('caption: '): st['caption'] = ' '.join(line[9:].split())
        elif line.startswith('event: '): st['event'] = line[7:]
        elif line.startswith('var '):
            name, state, queue = line[4:].split(' | ')
            st['vars'].append((name, state, queue))
        elif line.startswith('op '):
            m = re.match(r'op #\d+ (.*) \| (.*)$', line)
            st['ops'].append((m.group(1), m.group(2)))
    return st

url = 'file://' + os.path.join(root, 'build', 'html_test.html')

# ---- the walkthrough's text trace
events, tables, caption = [], [], ''
pats = [(r'^\s+push\s+#(\d+) (.*?)\s+pending (-?\d+)$', lambda m: 'push #%s "%s": waits for %s' % m.groups()),
        (r'^\s+var\s+(\S+)\s+readers\s+(-?\d+)\s+queue (\[.*\])$', lambda m: 'var %s: readers %s, queue %s' % m.groups()),
        (r'^\s+run\s+#(\d+) (.*)$', lambda m: 'run #%s "%s"' % m.groups()),
        (r'^\s+complete\s+#(\d+) (.*?)\s+status (-?\d+)$', lambda m: 'complete #%s "%s": status %s' % m.groups()),
        (r'^\s+delete\s+(\S+)\s+\(by (.*)\)$', lambda m: 'delete %s (by "%s")' % m.groups()),
        (r'^\s+grant\s+#(\d+) (.*?)\s+now waits for (-?\d+)$', lambda m: 'grant #%s "%s": now waits for %s' % m.groups())]
tvars = []
for line in open(os.path.join(root, 'build', 'html_test.txt')).read().split('\n'):
    m = re.match(r'^== (.*)$', line)
    if m: caption = ' '.join(m.group(1).split()); continue
    for pat, fmt in pats:
        m = re.match(pat, line)
        if m: events.append(fmt(m)); break
    else:
        m = re.match(r'^     (\S+)  (.*?)\s+(\[.*\])$', line)
        if m: tvars.append(m.groups()); continue
        m = re.match(r'^     ops:(.*)$', line)
        if m:
            ops = [(n, {'run': 'running', 'done': 'done'}.get(s, 'waiting {%s}' % s))
                   for n, s in re.findall(r'  (.+?) \{([^}]*)\}', m.group(1))]
            tables.append((len(events), caption, tvars, ops)); tvars = []
check(len(events) > 20 and len(tables) == 9, 'the text trace has its events and 9 tables', '%d events, %d tables' % (len(events), len(tables)))

# ---- the page, driven by its own keys and buttons
dom = chromium(url + '#selftest', '--dump-dom')
self = pre(dom, 'dp-selftest')
check(bool(self), 'chromium loads the page and runs its self-drive', dom[-300:])
shown = {}
for block in (self or '').split('=== ')[1:]:
    tag, _, body = block.partition('\n')
    shown[tag] = parse_state(body)
N = len(events)
fwd = [shown.get('First')] + [shown.get('forward %d' % i) for i in range(1, N + 1)]
check(all(fwd) and fwd[-1]['step'] == 'step %d of %d' % (N, N), 'the page has one step per event (%d)' % N,
      str(fwd[-1]['step'] if fwd[-1] else None))
if all(fwd):
    bad = [(i, fwd[i]['event'], events[i - 1]) for i in range(1, N + 1) if fwd[i]['event'] != events[i - 1]]
    check(not bad, 'every event shown as the text trace prints it', str(bad[:3]))
    bad = []
    for k, cap, tv, tops in tables:
        st = fwd[k]
        if st['caption'] != cap: bad.append((k, 'caption', st['caption'], cap))
        if st['vars'] != [tuple(v) for v in tv]: bad.append((k, 'vars', st['vars'], tv))
        if st['ops'] != tops: bad.append((k, 'ops', st['ops'], tops))
    check(not bad, 'variables, queues and ops after each of the %d program steps match the text trace' % len(tables), str(bad[:2]))
    back = [shown.get('back %d' % i) for i in range(N)]
    check(all(b == fwd[i] for i, b in enumerate(back)), 'Back / left arrow retraces every step')
    check(shown.get('End') == fwd[N] and shown.get('Last') == fwd[N] and shown.get('past the end') == fwd[N],
          'End, Last and a step past the end show the last step')
    check(shown.get('Home') == fwd[0] and fwd[0]['ops'] == [], 'Home shows the state before the first event')
    k = tables[5][0]
    ddom = chromium(url + '#step=%d' % k, '--dump-dom')
    direct = pre(ddom, 'dp-state')
    check(direct is not None and parse_state(direct) == fwd[k], '#step=%d opens at that step' % k)
    # the graph: the DOT file's 6 edges (2 dashed: a reader before a writer),
    # and each op's box coloured by the state the text trace gives it
    check(ddom.count('marker-end="url(#arrow)"') == 6 and ddom.count('stroke-dasharray="5 4"') == 2,
          'the graph has the 6 edges of the DOT output, 2 of them dashed')
    colours = {'#f4f5f7': 'not pushed', '#fff3cd': 'waiting', '#d6e8ff': 'running', '#e3f6e8': 'done'}
    boxes = [(n, colours.get(f, f)) for f, n in re.findall(r'<g><rect[^>]*fill="(#[0-9a-f]+)"[^>]*></rect><title>#\d+ (.*?)</title>', ddom)]
    want = dict((n, st.split(' ')[0]) for n, st in tables[5][3])
    check(len(boxes) == 5 and all(st == want.get(n, 'not pushed') for n, st in boxes),
          'the graph colours each op by its state at that step', str(boxes))

# ---- a screenshot for people (and a look by eye)
png = os.path.join(root, 'build', 'walkthrough.png')
if os.path.exists(png): os.remove(png)
chromium(url + '#step=%d' % (tables[6][0] if len(tables) > 6 else 0), '--hide-scrollbars', '--window-size=1400,1050', '--screenshot=' + png)
ok = os.path.exists(png) and open(png, 'rb').read(8) == b'\x89PNG\r\n\x1a\n' and os.path.getsize(png) > 20000
check(ok, 'screenshot saved as build/walkthrough.png')

# ---- hostile names stay text
hurl = 'file://' + os.path.join(root, 'build', 'html_hostile.html')
dom = chromium(hurl + '#step=1000', '--dump-dom')
st = pre(dom, 'dp-state')
title = re.search(r'<title>(.*?)</title>', dom, re.S)
check(title is not None and html.unescape(title.group(1)) == "</title><script>document.title='pwned'</script>",
      'a hostile title is shown as text', title.group(1) if title else dom[-300:])
names = ["</script><script>document.title='pwned'</script>", '<!-- <script>', 'line\u2028separator',
         'quote" apostrophe\' backslash\\', 'bad \ufffd\ufffd bytes', 'x' * 300]
if st:
    p = parse_state(st)
    check([n for n, _ in p['ops']] == names and all(s == 'done' for _, s in p['ops']),
          'hostile op names round-trip as text', str(p['ops']))
    check([v[0] for v in p['vars']][:1] == ['<b>bold</b> & <i>'] and p['caption'] == '</pre><h1>injected</h1>',
          'hostile variable name and caption round-trip as text', str(p['vars']) + p['caption'])
else:
    check(False, 'the hostile page renders', dom[-300:])
check('<h1>injected' not in dom and '<b>bold' not in dom and 'pwned</title>' not in dom, 'nothing injected into the DOM')

# ---- a capped recorder says what is missing
dom = chromium('file://' + os.path.join(root, 'build', 'html_capped.html'), '--dump-dom')
st = pre(dom, 'dp-state')
check(st is not None and st.startswith('step 0 of 5') and re.search(r'id="warn">\d+ events are missing[^<]*limit of 5', dom) is not None
      and 'graph was not recorded' in dom, 'a capped recorder\'s page says events are missing and no graph was kept')
print('html: %d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
PYEOF
