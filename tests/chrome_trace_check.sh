#!/usr/bin/env bash
# The profiler's Chrome trace as Perfetto's JSON importer and chrome://tracing
# read it: valid JSON (Python's json module, strict), integer pid/tid on every
# event, a process_name metadata event for every pid and a thread_name for
# every thread, one process per device, and the op names back intact.
cd "$(dirname "$0")/.." || exit 1
out=build/chrome_trace_test
if ! ./build/chrome_trace "$out.perdevice.json" "$out.naive.json"; then
    echo "FAIL chrome_trace runs"; echo "chrome_trace: 0 passed, 1 failed"; exit 1
fi
/usr/bin/python3 - "$out.perdevice.json" "$out.naive.json" <<'PYEOF'
import json, sys
passed = failed = 0
def check(ok, what):
    global passed, failed
    if ok: passed += 1; print("PASS " + what)
    else: failed += 1; print("FAIL " + what)

names = {'quote" backslash\\ tab\t end', '</script><!-- & more', 'line\u2028separator',
         'abcdefghijklmnopqrstuvwxyz0123456789AB\ufffd'}
for path, ndev in ((sys.argv[1], 2), (sys.argv[2], 1)):
    tag = path.rsplit('.', 2)[-2]
    try:
        raw = open(path, 'rb').read()
        raw.decode('utf-8')                     # strict: valid UTF-8
        doc = json.loads(raw, parse_constant=lambda c: 1 / 0)
        evs = doc['traceEvents']
    except Exception as e:
        check(False, '%s: parses as UTF-8 JSON (%s)' % (tag, e)); continue
    check(True, '%s: parses as UTF-8 JSON' % tag)
    ints = all(type(e.get('pid')) is int and type(e.get('tid')) is int for e in evs)
    check(ints, '%s: every pid and tid is an integer' % tag)
    ops = [e for e in evs if e.get('ph') == 'X']
    meta = [e for e in evs if e.get('ph') == 'M']
    check(len(ops) == 4 * ndev, '%s: %d op events (want %d)' % (tag, len(ops), 4 * ndev))
    pnames = {e['pid']: e['args']['name'] for e in meta if e.get('name') == 'process_name'}
    tnames = {(e['pid'], e['tid']) for e in meta if e.get('name') == 'thread_name'}
    pids = {e['pid'] for e in ops}
    check(pids <= set(pnames), '%s: every pid has a process_name (%s)' % (tag, sorted(pnames.items())))
    check({(e['pid'], e['tid']) for e in ops} <= tnames, '%s: every thread has a thread_name' % tag)
    check(len(pids) == ndev and sorted(pnames[p] for p in pids) == ['cpu %d' % d for d in range(ndev)],
          '%s: one process per device' % tag)
    check(ints and all(e['tid'] > 0 for e in evs), '%s: no thread 0, metadata included (Perfetto makes a thread of every pid/tid pair)' % tag)
    check({e['name'] for e in ops} == names, '%s: names round-trip (%s)' % (tag, sorted({e['name'] for e in ops})))
    check(b'</' not in raw and b'\xe2\x80\xa8' not in raw, '%s: no raw "</" or U+2028 in the file' % tag)
print("chrome_trace: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PYEOF
