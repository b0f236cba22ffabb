#!/usr/bin/env bash
# The replay page of the walkthrough (dp_trace_write_html) and the page of a
# make.c run (examples/make_page.c) in a real browser.
#
# Walkthrough: headless Chromium opens the page with "#selftest", where the
# page presses its own keys and buttons (End, First, Next / right arrow to
# the end, Back / left arrow to the start, Last, Home) and keeps what it
# showed after each press. At EVERY step the page's variables (state,
# holders, queue), its operations and the ops drawn in its graph must equal
# the states this script computes on its own from the walkthrough's text
# trace (the engine's raw events), and must agree with each other (a held
# variable has a holder that is not done; a waiting op stands in as many
# queues as it waits for; ...); a self-test shows that a state lagging one
# event behind is caught. The program's own tables after each of its steps
# must match too. No step may show raw fields ("readers -1", "{0}",
# "waiting for 0"). The graph's edges must not cross and their labels must
# not overlap. "#step=K" must show the same as stepping there, pages with
# hostile names must show them as text, a capped recorder's page must say
# events are missing; screenshots of a few steps go to build/.
#
# make page: examples/make.c --trace on a copy of examples/make_demo at -j 2,
# then examples/make_page.c; the page must have its lanes (at most 2, no two
# bars of a lane overlapping), one bar per rule that ran, each starting
# after the rules it depends on ended, and pointing at a bar must name its
# dependencies and draw one arrow per prerequisite rule; a screenshot goes
# to build/make_page.png.
#
# HTML_CHECK_PAGE=FILE checks FILE as the walkthrough's page instead of the
# one the walkthrough writes (to see the check fail on another version).
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
if [ -n "${HTML_CHECK_PAGE:-}" ]; then cp "$HTML_CHECK_PAGE" build/html_test.html || exit 1; fi
rm -rf build/html_make_demo && mkdir -p build/html_make_demo && cp examples/make_demo/*.c examples/make_demo/*.h examples/make_demo/Makefile build/html_make_demo/ || exit 1
if ! ./build/make_example -s -j 2 --trace build/html_make_trace.txt -C build/html_make_demo > build/html_make.out 2>&1 \
   || ! ./build/make_page build/html_make_trace.txt build/html_make.html "make -j 2 in examples/make_demo" >> build/html_make.out 2>&1; then
    echo "FAIL html: make_example --trace or make_page failed:"; cat build/html_make.out; echo "html: 0 passed, 1 failed"; exit 1
fi
exec /usr/bin/python3 - "$PWD" <<'PYEOF'
import html, os, re, shutil, subprocess, sys, tempfile
root = sys.argv[1]
B = os.path.join(root, 'build')
passed = failed = 0
def check(ok, what, detail=''):
    global passed, failed
    if ok: passed += 1; print('PASS ' + what)
    else: failed += 1; print('FAIL ' + what + (': ' + str(detail)[:600] if detail else ''))

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

def screenshot(url, png, size='1400,1050'):
    if os.path.exists(png): os.remove(png)
    chromium(url, '--hide-scrollbars', '--window-size=' + size, '--screenshot=' + png)
    return os.path.exists(png) and open(png, 'rb').read(8) == b'\x89PNG\r\n\x1a\n' and os.path.getsize(png) > 20000

def pre(dom, ident):
    m = re.search(r'<pre id="%s"[^>]*>(.*?)</pre>' % ident, dom, re.S)
    return html.unescape(m.group(1)) if m else None

def parse_state(text):
    """A dp-state block as the page wrote it."""
    st = {'step': None, 'events': [], 'caption': '', 'title': '', 'lines': [], 'vars': [], 'ops': [], 'nodes': [], 'edges': []}
    for line in text.split('\n'):
        if line.startswith('step '): st['step'] = line
        elif line.startswith('events: '): st['events'] = [int(x) for x in line[8:].split(',') if x.strip()]
        elif line.startswith('caption: '): st['caption'] = ' '.join(line[9:].split())
        elif line.startswith('title: '): st['title'] = line[7:]
        elif line.startswith('line: '): st['lines'].append(line[6:])
        elif line.startswith('var '):
            f = line[4:].split(' | ')
            if len(f) == 4: st['vars'].append((f[0], f[1], tuple(sorted(h for h in f[2].split(', ') if h)), f[3]))
            else: st['vars'].append(tuple(f))
        elif line.startswith('op '):
            m = re.match(r'op #(\d+) (.*) \| (.*)$', line)
            st['ops'].append((int(m.group(1)), m.group(2), m.group(3)))
        elif line.startswith('node '):
            st['nodes'].append(tuple(line[5:].split(' | ')))
        elif line.startswith('edge '):
            st['edges'].append(tuple(line[5:].split(' | ')))
    return st

# ---- the walkthrough's text trace: the engine's raw events, and the program's tables
events, tables, caption, tvars = [], [], '', []
for line in open(os.path.join(B, 'html_test.txt')).read().split('\n'):
    m = re.match(r'^== (.*)$', line)
    if m: caption = ' '.join(m.group(1).split()); continue
    m = re.match(r'^\s+push\s+#(\d+) (.*?)\s+pending (-?\d+)$', line)
    if m: events.append(('push', int(m.group(1)), m.group(2), int(m.group(3)))); continue
    m = re.match(r'^\s+var\s+(\S+)\s+readers\s+(-?\d+)\s+queue \[(.*)\]$', line)
    if m:
        q = [(n, w == 'W') for n, w in re.findall(r'(.+?) \((R|W)\)(?:, |$)', m.group(3))]
        events.append(('var', m.group(1), int(m.group(2)), q)); continue
    m = re.match(r'^\s+run\s+#(\d+) (.*)$', line)
    if m: events.append(('run', int(m.group(1)), m.group(2))); continue
    m = re.match(r'^\s+complete\s+#(\d+) (.*?)\s+status (-?\d+)$', line)
    if m: events.append(('complete', int(m.group(1)), m.group(2), int(m.group(3)))); continue
    m = re.match(r'^\s+delete\s+(\S+)\s+\(by (.*)\)$', line)
    if m: events.append(('delete', m.group(1), m.group(2))); continue
    m = re.match(r'^\s+grant\s+#(\d+) (.*?)\s+now waits for (-?\d+)$', line)
    if m: events.append(('grant', int(m.group(1)), m.group(2), int(m.group(3)))); continue
    m = re.match(r'^     (\S+)  (.*?)\s+by (.*?)\s+queue (\[.*\])$', line)
    if m:
        tvars.append((m.group(1), m.group(2), tuple(sorted(h for h in m.group(3).split(', ') if h != '-')), m.group(4))); continue
    m = re.match(r'^     ops:(.*)$', line)
    if m:
        ops = [(n, {'run': 'running', 'done': 'done', 'ready': 'ready'}.get(s, 'waiting for %s' % s))
               for n, s in re.findall(r'  (.+?) \{([^}]*)\}', m.group(1))]
        tables.append((len(events), caption, tvars, ops)); tvars = []
NE = len(events)
check(NE > 20 and len(tables) == 9, 'the text trace has its events and 9 tables', '%d events, %d tables' % (NE, len(tables)))

# ---- the states, computed here from the raw events: MXNet's algorithm.
# A var event is a release by the op whose completion came last, if that op
# holds the variable; otherwise the next pushed op is appended to it.
def model_states():
    vars_, ops, order, states = {}, {}, [], []
    last_complete = None
    def var(n):
        return vars_.setdefault(n, {'holders': [], 'mode': '', 'q': [], 'deleted': False})
    for n in ['A', 'B', 'C']: var(n)
    for i, ev in enumerate(events):
        k = ev[0]
        if k == 'push':
            ops[ev[1]] = {'name': ev[2], 'state': 'waiting' if ev[3] else 'ready', 'pending': ev[3]}; order.append(ev[1]); last_complete = None
        elif k == 'run': ops[ev[1]]['state'] = 'running'; last_complete = None
        elif k == 'complete': ops[ev[1]]['state'] = 'done' if ev[3] == 0 else 'failed'; last_complete = ev[1]
        elif k == 'grant': ops[ev[1]]['pending'] = ev[3]; ops[ev[1]]['state'] = 'waiting' if ev[3] else 'ready'
        elif k == 'delete': v = var(ev[1]); v.update(holders=[], mode='', q=[], deleted=True)
        elif k == 'var':
            v = var(ev[1]); old = v['q']
            if last_complete is not None and last_complete in v['holders']:
                v['holders'].remove(last_complete)
                moved = old[:len(old) - len(ev[3])]
                v['holders'] += [s for s, _ in moved]; v['q'] = old[len(moved):]
            else:
                nxt = next(e for e in events[i:] if e[0] == 'push')
                if len(ev[3]) == len(old) + 1: v['q'] = old + [(nxt[1], ev[3][-1][1])]
                else: v['holders'].append(nxt[1])
            v['mode'] = 'w' if ev[2] < 0 else 'r' if ev[2] > 0 else ''
            assert len(v['holders']) == (1 if ev[2] < 0 else ev[2]), ('holders', i, v)
            assert [ops.get(s, {'name': None})['name'] if s in ops else nxt[2] for s, _ in v['q']] == [n for n, _ in ev[3]], ('queue', i, v)
        states.append({'vars': {n: dict(v, holders=list(v['holders']), q=list(v['q'])) for n, v in vars_.items()},
                       'ops': {s: dict(o) for s, o in ops.items()}, 'order': list(order)})
    return states
try:
    model = model_states()
    check(True, 'the raw events follow the algorithm (holders and queues computed from them agree with every event)')
except (AssertionError, StopIteration) as e:
    model = None
    check(False, 'the raw events follow the algorithm', repr(e))

def expect(i):
    """What the page must show after raw event i (1-based; 0: before any)."""
    if i == 0: return ([(n, 'free', (), '[]') for n in ['A', 'B', 'C']], [])
    s = model[i - 1]
    name = lambda seq: s['ops'][seq]['name'] if seq in s['ops'] else next(e[2] for e in events if e[0] == 'push' and e[1] == seq)
    vs = []
    for n in ['A', 'B', 'C']:
        v = s['vars'][n]
        st = 'deleted' if v['deleted'] else {'w': 'held for writing', 'r': 'held for reading', '': 'free'}[v['mode']]
        vs.append((n, st, tuple(sorted('#%d %s' % (h, name(h)) for h in v['holders'])),
                   '[' + ', '.join('%s (%s)' % (name(q), 'W' if w else 'R') for q, w in v['q']) + ']'))
    os_ = []
    for seq in s['order']:
        o = s['ops'][seq]
        os_.append((seq, o['name'], 'waiting for %d' % o['pending'] if o['state'] == 'waiting' else o['state']))
    return vs, os_

FILL = {'waiting': '#fff3cd', 'ready': '#efe3ff', 'running': '#d6e8ff', 'done': '#e3f6e8', 'failed': '#fde2e2'}
RAW = re.compile(r'readers|-1\b|\{\d+\}|waiting for 0\b|pending|\bnow waits for 0\b')
def consistent(st):
    """The page's step against itself; returns a list of what contradicts."""
    bad = []
    ops = dict((seq, (name, state)) for seq, name, state in st['ops'])
    label = dict(('#%d %s' % (seq, name), seq) for seq, name, _ in st['ops'])
    queued = {}
    for v in st['vars']:
        if len(v) != 4: bad.append(('var line without holders', v)); continue
        n, state, holders, queue = v
        if state.startswith('held') and not holders: bad.append((n, state, 'but nobody holds it'))
        if state == 'held for writing' and len(holders) != 1: bad.append((n, 'held for writing by', holders))
        if state in ('free', 'deleted') and (holders or queue != '[]'): bad.append((n, state, holders, queue))
        if state == 'free' and queue != '[]': bad.append((n, 'free with a queue', queue))
        for h in holders:
            if h not in label: bad.append((n, 'held by an op not pushed', h))
            elif ops[label[h]][1] in ('done',) or ops[label[h]][1].startswith('failed'): bad.append((n, 'held by a finished op', h))
        for qn in re.findall(r'(?:\[|, )(.+?) \((?:R|W)\)', queue):
            seqs = [s for s, (nm, stt) in ops.items() if nm == qn and stt.startswith('waiting')]
            if not seqs: bad.append((n, 'queue names an op that is not waiting', qn))
            else: queued[seqs[0]] = queued.get(seqs[0], 0) + 1
    for seq, (name, state) in ops.items():
        m = re.match(r'waiting for (\d+)$', state)
        if m and int(m.group(1)) != queued.get(seq, 0): bad.append(('#%d' % seq, state, 'but in %d queues' % queued.get(seq, 0)))
        if state == 'waiting for 0': bad.append(('#%d' % seq, state))
        held = [v for v in st['vars'] if len(v) == 4 and '#%d %s' % (seq, name) in v[2]]
        if state in ('ready', 'running') and not held: bad.append(('#%d' % seq, state, 'but holds no variable (every op here uses one)'))
    for text in [st['title'], st['caption']] + st['lines']:
        if RAW.search(text): bad.append(('raw field in the text', text))
    drawn = dict((int(n[0][1:]), n) for n in st['nodes'])
    if sorted(drawn) != sorted(ops): bad.append(('graph draws', sorted(drawn), 'pushed', sorted(ops)))
    for seq, n in drawn.items():
        want = ops.get(seq, ('', ''))[1]
        want = 'waiting' if want.startswith('waiting') else want
        if n[1] != want or FILL.get(n[1]) != n[2]: bad.append(('graph colours #%d' % seq, n, want))
    for e in st['edges']:
        a, b = [int(x) for x in re.findall(r'#(\d+)', e[0])]
        if a not in drawn or b not in drawn: bad.append(('edge to an op not drawn', e))
    return bad

# ---- the page, driven by its own keys and buttons
url = 'file://' + os.path.join(B, 'html_test.html')
dom = chromium(url + '#selftest', '--dump-dom')
self = pre(dom, 'dp-selftest')
check(bool(self), 'chromium loads the page and runs its self-drive', dom[-300:])
shown = {}
for block in (self or '').split('=== ')[1:]:
    tag, _, body = block.partition('\n')
    shown[tag] = parse_state(body)
first = shown.get('First')
N = int(re.match(r'step 0 of (\d+)', first['step']).group(1)) if first and first['step'] else 0
fwd = [first] + [shown.get('forward %d' % i) for i in range(1, N + 1)]
check(N > 0 and all(fwd) and fwd[-1]['step'] == 'step %d of %d' % (N, N), 'the page steps through %d steps' % N)
if N and all(fwd) and model:
    seen = []
    for k in range(1, N + 1): seen += fwd[k]['events']
    upto = lambda k: max(fwd[k]['events']) if fwd[k]['events'] else k   # a page that does not say: one event a step
    check(seen == list(range(1, NE + 1)), 'the steps take every one of the %d raw events once, in order' % NE, seen)
    bad = []
    for k in range(N + 1):
        vs, os_ = expect(upto(k))
        if fwd[k]['vars'] != vs: bad.append((k, 'vars', fwd[k]['vars'], vs))
        if fwd[k]['ops'] != os_: bad.append((k, 'ops', fwd[k]['ops'], os_))
    check(not bad, 'at every step the variables (state, holders, queue) and ops equal the states computed from the text trace', bad[:2])
    bad = [(k, consistent(fwd[k])) for k in range(N + 1) if consistent(fwd[k])]
    check(not bad, 'at every step the page agrees with itself (holders, queues, counts, the graph) and shows no raw fields', bad[:2])
    # the check can fail: each step's variables shown with the previous step's
    # states (the lag the page once had), a var line without holders, "waiting
    # for 0" and a raw field must all be caught
    lagging = [k for k in range(2, N + 1) if consistent(dict(fwd[k], vars=fwd[k - 1]['vars']))]
    old = dict(fwd[8], vars=[('A', 'being written', '[]')], ops=fwd[8]['ops'] + [(9, 'x', 'waiting for 0')], lines=['var A: readers -1, queue []'])
    bad = consistent(old)
    changed = [k for k in range(2, N + 1) if fwd[k]['vars'] != fwd[k - 1]['vars']]
    check(changed and lagging == changed and len(bad) >= 4,
          'the consistency check catches variables one step behind (at each of the %d steps that change them), a var without holders, "waiting for 0" and raw fields'
          % len(changed), (lagging, changed, bad))
    bad = [(k, fwd[k]['title']) for k in range(1, N + 1) if not fwd[k]['title'] or not fwd[k]['lines']]
    titles = [fwd[k]['title'] for k in range(1, N + 1)]
    check(not bad and any('delete_var' in t and 'runs' in t for t in titles) and any('delete_var' in t and 'finishes' in t for t in titles),
          'every step has its own heading and sentences (the delete\'s run and completion too)', bad[:3])
    bad = []
    for ne, cap, tv, tops in tables:
        k = next((k for k in range(N + 1) if upto(k) == ne), None)
        if k is None: bad.append((ne, 'no step ends at this event')); continue
        st = fwd[k]
        if st['caption'] != cap: bad.append((k, 'caption', st['caption'], cap))
        if [v for v in st['vars']] != [(n, s_, tuple(sorted('#%d %s' % (next((o[0] for o in st['ops'] if o[1] == h), 0), h) for h in hs)), q) for n, s_, hs, q in tv]:
            bad.append((k, 'vars', st['vars'], tv))
        if [(n, s_) for _, n, s_ in st['ops']] != tops: bad.append((k, 'ops', st['ops'], tops))
    check(not bad, 'after each of the %d program steps the page shows the program\'s own table' % len(tables), bad[:2])
    back = [shown.get('back %d' % i) for i in range(N)]
    check(all(b == fwd[i] for i, b in enumerate(back)), 'Back / left arrow retraces every step')
    check(shown.get('End') == fwd[N] and shown.get('Last') == fwd[N] and shown.get('past the end') == fwd[N],
          'End, Last and a step past the end show the last step')
    check(shown.get('Home') == fwd[0] and fwd[0]['ops'] == [] and fwd[0]['nodes'] == [], 'Home shows the state before the first event, no op drawn')
    k = N // 2
    ddom = chromium(url + '#step=%d' % k, '--dump-dom')
    direct = pre(ddom, 'dp-state')
    check(direct is not None and parse_state(direct) == fwd[k], '#step=%d opens at that step' % k)
    # the whole graph at the end: the DOT file's 6 edges (2 dashed), none crossing, no label on another
    edot = len(re.findall(r'->', open(os.path.join(B, 'html_test.dot')).read()))
    check(len(fwd[N]['edges']) == edot == 6 and sum(e[2] == 'dashed' for e in fwd[N]['edges']) == 2,
          'the graph has the 6 edges of the DOT output, 2 of them dashed', fwd[N]['edges'])
    ldom = chromium(url + '#step=%d' % N, '--dump-dom')
    paths = [[float(x) for x in re.findall(r'-?\d+(?:\.\d+)?', d)] for d in re.findall(r'<g class="edge"><path d="([^"]+)"', ldom)]
    def bez(p, n=40):
        x0, y0, a, b, c, d, x1, y1 = p
        return [((1-t)**3*x0 + 3*(1-t)**2*t*a + 3*(1-t)*t*t*c + t**3*x1, (1-t)**3*y0 + 3*(1-t)**2*t*b + 3*(1-t)*t*t*d + t**3*y1)
                for t in [i / n for i in range(n + 1)]]
    def seg_cross(p, q, r, s):
        def o(a, b, c): return (b[0]-a[0])*(c[1]-a[1]) - (b[1]-a[1])*(c[0]-a[0])
        return o(p, q, r) * o(p, q, s) < 0 and o(r, s, p) * o(r, s, q) < 0
    curves = [bez(p) for p in paths if len(p) == 8]
    cross = []
    for i in range(len(curves)):
        for j in range(i + 1, len(curves)):
            a, b = curves[i], curves[j]
            if any(seg_cross(a[u], a[u+1], b[v], b[v+1]) for u in range(len(a)-1) for v in range(len(b)-1)): cross.append((i, j))
    check(len(curves) == 6 and not cross, 'no two edges of the graph cross', (len(curves), cross))
    rects = [[float(x) for x in m] for m in re.findall(r'<rect class="label" x="([-\d.]+)" y="([-\d.]+)" width="([-\d.]+)" height="([-\d.]+)"', ldom)]
    boxes = [[float(x) for x in m] for m in re.findall(r'<g class="op"><rect x="([-\d.]+)" y="([-\d.]+)" width="([-\d.]+)" height="([-\d.]+)"', ldom)]
    def overlap(a, b): return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]
    hits = [(i, j) for i in range(len(rects)) for j in range(i + 1, len(rects)) if overlap(rects[i], rects[j])] + \
           [('box', i) for i in range(len(rects)) for b in boxes if overlap(rects[i], b)]
    check(len(rects) == 6 and len(boxes) == 5 and not hits, 'the edge labels overlap neither each other nor an op', hits)
    # screenshots of a few steps, for people
    ok = True
    for k in [3, 8, 13]:
        ok = screenshot(url + '#step=%d' % k, os.path.join(B, 'walkthrough_step%d.png' % k)) and ok
    if ok: shutil.copyfile(os.path.join(B, 'walkthrough_step13.png'), os.path.join(B, 'walkthrough.png'))
    check(ok, 'screenshots saved as build/walkthrough.png and build/walkthrough_step*.png')

# ---- the make page: lanes, bars, hover
murl = 'file://' + os.path.join(B, 'html_make.html')
trace = [l.split('\t') for l in open(os.path.join(B, 'html_make_trace.txt')).read().split('\n') if l]
mdom = chromium(murl + '#selftest', '--dump-dom')
lanes = re.findall(r'<g class="lane" data-lane="(\d+)"', mdom)
bars = re.findall(r'<g class="bar (ok|failed)" tabindex="0" data-lane="(\d+)" data-start="(\d+)" data-end="(\d+)" data-status="(-?\d+)" data-target="([^"]*)" data-pre="([^"]*)"', mdom)
check(sorted(l[4] for l in trace) == ['greet.o', 'hello', 'main.o', 'util.o'] and all(l[0] == 'rule' for l in trace),
      'make.c --trace wrote a line per rule that ran', trace)
check(1 <= len(lanes) <= 2 and len(bars) == len(trace) == 4, 'the make page has its lanes (at most -j 2) and one bar per rule', (lanes, len(bars)))
bt = dict((b[5], (int(b[1]), int(b[2]), int(b[3]), html.unescape(b[6]).split('\t'))) for b in bars)
bad = [(a, b) for a in bt for b in bt if a < b and bt[a][0] == bt[b][0] and bt[a][1] < bt[b][2] and bt[b][1] < bt[a][2]]
bad += [(t, p) for t in bt for p in bt[t][3] if p in bt and bt[p][2] > bt[t][1]]
check(not bad and set(bt.get('hello', (0, 0, 0, []))[3]) == {'main.o', 'util.o', 'greet.o'},
      'no two bars of a lane overlap, and every rule starts after the rules it needs ended', bad)
hover = {}
for block in (pre(mdom, 'mk-selftest') or '').split('=== ')[1:]:
    name, _, body = block.partition('\n')
    hover[name] = body
h = hover.get('hello', '')
check(len(hover) == 4 and 'Waited for the rules: main.o, util.o, greet.o.' in h and 'dep: main.o util.o greet.o' in h and 'arrows: 3' in h
      and all('Rules that waited for it: hello.' in hover.get(o, '') and 'user: hello' in hover.get(o, '') and 'arrows: 0' in hover.get(o, '')
              for o in ['main.o', 'util.o', 'greet.o']),
      'pointing at a bar names what it waited for and what waited for it, with an arrow per prerequisite rule', hover)
check(screenshot(murl, os.path.join(B, 'make_page.png'), '1100,700'), 'screenshot saved as build/make_page.png')

# ---- hostile names stay text
hurl = 'file://' + os.path.join(B, 'html_hostile.html')
dom = chromium(hurl + '#step=1000', '--dump-dom')
st = pre(dom, 'dp-state')
title = re.search(r'<title>(.*?)</title>', dom, re.S)
check(title is not None and html.unescape(title.group(1)) == "</title><script>document.title='pwned'</script>",
      'a hostile title is shown as text', title.group(1) if title else dom[-300:])
names = ["</script><script>document.title='pwned'</script>", '<!-- <script>', 'line\u2028separator',
         'quote" apostrophe\' backslash\\', 'bad \ufffd\ufffd bytes', 'x' * 300]
if st:
    p = parse_state(st)
    check([n for _, n, _ in p['ops']] == names and all(s == 'done' for _, _, s in p['ops']),
          'hostile op names round-trip as text', str(p['ops']))
    check([v[0] for v in p['vars']][:1] == ['<b>bold</b> & <i>'] and p['caption'] == '</pre><h1>injected</h1>',
          'hostile variable name and caption round-trip as text', str(p['vars']) + p['caption'])
else:
    check(False, 'the hostile page renders', dom[-300:])
check('<h1>injected' not in dom and '<b>bold' not in dom and 'pwned</title>' not in dom, 'nothing injected into the DOM')

# ---- a capped recorder says what is missing
dom = chromium('file://' + os.path.join(B, 'html_capped.html'), '--dump-dom')
st = pre(dom, 'dp-state')
check(st is not None and st.startswith('step 0 of ') and re.search(r'id="warn">\d+ events are missing[^<]*limit of 5', dom) is not None
      and 'graph was not recorded' in dom, 'a capped recorder\'s page says events are missing and no graph was kept')
print('html: %d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
PYEOF
