/* make_page.c - a page that shows a run of examples/make.c over time.

   examples/make.c --trace FILE writes one line per rule whose commands ran:

       rule<TAB>start_us<TAB>end_us<TAB>status<TAB>target<TAB>prereq...

   (microseconds since make started; order-only prerequisites after a `|`).
   This program turns that file into one self-contained HTML page (inline
   style and script, nothing fetched): each job slot of make's -j N is a
   lane, each rule a bar from its first command to its end, failed rules in
   red. Pointing at a bar (or focusing it with Tab) names the rule's time
   and lane, lights up the rules it waited for and the rules that waited for
   it, and draws an arrow from the end of each prerequisite to its start.

   The lanes are job slots, not threads: make.c runs every command from a
   slot of -j N, and the page gives each bar the first lane that is free
   when it starts (the trace records times, not slot numbers), which never
   needs more lanes than jobs ran at once.

   Build from the repository root (it needs nothing of depeng):
       gcc -std=c11 -Wall -Wextra -pedantic examples/make_page.c -o build/make_page
       ./build/make_example -j 2 --trace build/make_trace.txt -C examples/make_demo
       ./build/make_page build/make_trace.txt build/make.html "make -j 2 in examples/make_demo"

   Opening build/make.html#selftest makes the page point at every bar in
   turn and write what it showed into <pre id="mk-selftest"> (for
   tests/html_check.sh). Limits: 100,000 rules, lines of 64 KiB. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rule {
    long long start, end;
    int status, lane;
    char *target;
    char **pre; int npre, oo_at;  /* pre[oo_at..] are order-only (-1: none) */
} rule;

#define MAX_RULES 100000
#define MAX_LINE 65536

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "make_page: out of memory\n"); exit(1); }
    return p;
}
static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return (char *)memcpy(xmalloc(n), s, n);
}

/* Text for HTML element content and attribute values. */
static void put_html(FILE *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
}

static void free_rules(rule *r, int n) {   /* n == 1 with r not from malloc: the fields only */
    int i, k;
    for (i = 0; i < n; i++) {
        for (k = 0; k < r[i].npre; k++) free(r[i].pre[k]);
        free(r[i].pre); free(r[i].target);
    }
}

/* Reads the trace; returns the number of rules, or -1 (with a message). */
static int read_trace(const char *path, rule **out) {
    FILE *f = fopen(path, "r");
    char *line;
    int n = 0, cap = 0, lineno = 0;
    rule *r = NULL;
    if (!f) { perror(path); return -1; }
    line = (char *)xmalloc(MAX_LINE);
    while (fgets(line, MAX_LINE, f)) {
        char **field, *p, *end;
        rule x;
        int nf = 0, k;
        size_t len = strlen(line);
        lineno++;
        if (len == MAX_LINE - 1 && line[len - 1] != '\n') { fprintf(stderr, "%s:%d: line longer than %d bytes\n", path, lineno, MAX_LINE - 2); goto bad; }
        if (len && line[len - 1] == '\n') line[--len] = '\0';
        if (!len) continue;
        if (strncmp(line, "rule\t", 5) != 0) { fprintf(stderr, "%s:%d: not a `rule` line\n", path, lineno); goto bad; }
        field = (char **)xmalloc((len / 2 + 2) * sizeof *field);   /* the tab-separated fields after "rule" */
        for (p = line + 5;; ) {
            char *t = strchr(p, '\t');
            if (t) *t = '\0';
            field[nf++] = p;
            if (!t) break;
            p = t + 1;
        }
        memset(&x, 0, sizeof x);
        x.pre = field;
        x.oo_at = -1;
        if (nf < 4 || !*field[3]) { fprintf(stderr, "%s:%d: a rule line needs start, end, status and target\n", path, lineno); free(field); goto bad; }
        x.start = strtoll(field[0], &end, 10); if (*end || end == field[0]) { fprintf(stderr, "%s:%d: bad start time '%s'\n", path, lineno, field[0]); free(field); goto bad; }
        x.end = strtoll(field[1], &end, 10);   if (*end || end == field[1] || x.end < x.start) { fprintf(stderr, "%s:%d: bad end time '%s'\n", path, lineno, field[1]); free(field); goto bad; }
        x.status = (int)strtol(field[2], &end, 10); if (*end || end == field[2]) { fprintf(stderr, "%s:%d: bad status '%s'\n", path, lineno, field[2]); free(field); goto bad; }
        x.target = xstrdup(field[3]);
        /* the prerequisites, copied over the fields array itself ("|" before order-only ones) */
        for (k = 4; k < nf; k++) {
            if (strcmp(field[k], "|") == 0) x.oo_at = x.npre;
            else if (*field[k]) x.pre[x.npre++] = xstrdup(field[k]);
        }
        if (n == MAX_RULES) { fprintf(stderr, "%s:%d: more than %d rules\n", path, lineno, MAX_RULES); free_rules(&x, 1); goto bad; }
        if (n == cap) {
            rule *g;
            cap = cap ? 2 * cap : 64;
            g = (rule *)xmalloc((size_t)cap * sizeof *g);
            if (r) { memcpy(g, r, (size_t)n * sizeof *g); free(r); }
            r = g;
        }
        r[n++] = x;
    }
    free(line);
    fclose(f);
    *out = r;
    return n;
bad:
    free(line);
    fclose(f);
    free_rules(r, n);
    free(r);
    return -1;
}

static int by_start(const void *a, const void *b) {
    const rule *x = (const rule *)a, *y = (const rule *)b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : x->end < y->end ? -1 : x->end > y->end;
}

/* Each rule in the first lane free at its start; returns the number of lanes. */
static int assign_lanes(rule *r, int n) {
    long long *free_at = (long long *)xmalloc((size_t)(n ? n : 1) * sizeof *free_at);
    int nl = 0, i, l;
    for (i = 0; i < n; i++) {
        for (l = 0; l < nl && free_at[l] > r[i].start; l++) {}
        if (l == nl) nl++;
        free_at[l] = r[i].end;
        r[i].lane = l;
    }
    free(free_at);
    return nl;
}

/* The targets, sorted, to tell a prerequisite made by a rule from a file. */
static const char **names;
static int nnames;
static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }
static int is_rule(const char *name) { return nnames && bsearch(&name, names, (size_t)nnames, sizeof *names, cmp_name) != NULL; }

static const char *style =
    "body{font:15px/1.4 system-ui,\"DejaVu Sans\",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}\n"
    "header{background:#1d2330;color:#fff;padding:10px 18px}header h1{font-size:18px;margin:0;font-weight:600}\n"
    "main{padding:14px 18px}section{background:#fff;border:1px solid #d5d9e0;border-radius:8px;padding:8px 14px 12px;margin-bottom:14px}\n"
    "h2{font-size:15px;margin:8px 0 6px;color:#4a5468;text-transform:uppercase;letter-spacing:.04em}\n"
    "#chart svg{display:block;max-width:100%;height:auto}.bar rect{stroke-width:1.5}.bar{cursor:pointer}.bar:focus{outline:none}\n"
    ".bar.ok rect{fill:#d6e8ff;stroke:#1f5fae}.bar.failed rect{fill:#fde2e2;stroke:#c03030}\n"
    ".bar.cur rect{fill:#1f5fae}.bar.cur text{fill:#fff}.bar.dep rect{fill:#ffe9d6;stroke:#c05a00}.bar.user rect{fill:#e3f6e8;stroke:#2e9e5b}\n"
    ".dim{opacity:.35}#info{min-height:4.2em;font-size:14px}#info b{font-weight:600}.legend{font-size:13px;color:#4a5468}\n"
    ".key{display:inline-block;width:14px;height:10px;border:1.5px solid;border-radius:2px;margin:0 4px 0 12px;vertical-align:middle}\n";

/* The hover: light up the bar, what it waited for (dep) and what waited for
   it (user), draw arrows from each prerequisite's end to its start. */
static const char *script =
    "(function(){'use strict';\n"
    "var bars=[].slice.call(document.querySelectorAll('.bar')),arrows=document.getElementById('arrows'),info=document.getElementById('info');\n"
    "var byName={};bars.forEach(function(b){byName[b.getAttribute('data-target')]=b;});\n"
    "function list(b,a){var s=b.getAttribute(a);return s?s.split('\\t'):[];}\n"
    "function ms(us){return (us/1000).toFixed(1)+' ms';}\n"
    "function show(b){\n"
    " var me=b.getAttribute('data-target'),pre=list(b,'data-pre'),users=[],made=[],files=[];\n"
    " bars.forEach(function(o){o.classList.remove('cur','dep','user');o.classList.add('dim');if(list(o,'data-pre').indexOf(me)>=0)users.push(o);});\n"
    " arrows.textContent='';b.classList.add('cur');b.classList.remove('dim');\n"
    " pre.forEach(function(p){var o=byName[p];if(o&&o!==b){made.push(p);o.classList.add('dep');o.classList.remove('dim');\n"
    "  var r=o.querySelector('rect'),m=b.querySelector('rect'),x1=+r.getAttribute('x')+ +r.getAttribute('width'),y1=+r.getAttribute('y')+ +r.getAttribute('height')/2;\n"
    "  var x2=+m.getAttribute('x'),y2=+m.getAttribute('y')+ +m.getAttribute('height')/2,l=document.createElementNS('http://www.w3.org/2000/svg','path');\n"
    "  l.setAttribute('d','M '+x1+' '+y1+' C '+(x1+30)+' '+y1+', '+(x2-30)+' '+y2+', '+x2+' '+y2);l.setAttribute('class','arrow');\n"
    "  l.setAttribute('fill','none');l.setAttribute('stroke','#c05a00');l.setAttribute('stroke-width','2');l.setAttribute('marker-end','url(#head)');arrows.appendChild(l);}\n"
    "  else if(!o)files.push(p);});\n"
    " users.forEach(function(o){o.classList.add('user');o.classList.remove('dim');});\n"
    " var t=me+': slot '+(+b.getAttribute('data-lane')+1)+', from '+ms(+b.getAttribute('data-start'))+' to '+ms(+b.getAttribute('data-end'))+\n"
    "  ' ('+ms(b.getAttribute('data-end')-b.getAttribute('data-start'))+')'+(b.classList.contains('failed')?', FAILED with status '+b.getAttribute('data-status'):'')+'.';\n"
    " info.textContent='';var h=document.createElement('b');h.textContent=t;info.appendChild(h);\n"
    " info.appendChild(document.createElement('br'));\n"
    " info.appendChild(document.createTextNode('Waited for the rules: '+(made.length?made.join(', '):'none')+(files.length?'; reads the files: '+files.join(', '):'')+'.'));\n"
    " info.appendChild(document.createElement('br'));\n"
    " info.appendChild(document.createTextNode('Rules that waited for it: '+(users.length?users.map(function(o){return o.getAttribute('data-target');}).join(', '):'none')+'.'));\n"
    " return info.textContent;}\n"
    "function clear(){bars.forEach(function(o){o.classList.remove('cur','dep','user','dim');});arrows.textContent='';\n"
    " info.textContent='Point at a bar (or Tab to it) to see what the rule waited for.';}\n"
    "bars.forEach(function(b){b.addEventListener('mouseenter',function(){show(b);});b.addEventListener('focus',function(){show(b);});\n"
    " b.addEventListener('mouseleave',clear);b.addEventListener('blur',clear);});\n"
    "clear();\n"
    "if(location.hash==='#selftest'){var out=[];bars.forEach(function(b){b.dispatchEvent(new MouseEvent('mouseenter'));\n"
    " out.push('=== '+b.getAttribute('data-target'));out.push(info.textContent);\n"
    " out.push('dep: '+bars.filter(function(o){return o.classList.contains('dep');}).map(function(o){return o.getAttribute('data-target');}).join(' '));\n"
    " out.push('user: '+bars.filter(function(o){return o.classList.contains('user');}).map(function(o){return o.getAttribute('data-target');}).join(' '));\n"
    " out.push('arrows: '+arrows.querySelectorAll('path').length);b.dispatchEvent(new MouseEvent('mouseleave'));});\n"
    " document.getElementById('mk-selftest').textContent=out.join('\\n')+'\\n';}\n"
    "})();\n";

static int write_page(FILE *out, rule *r, int n, int nl, const char *title) {
    const int W = 1000, LM = 90, LH = 40, TOP = 30, RM = 40;
    long long t_end = 1;
    double sx;
    int i, k, height = TOP + (nl ? nl : 1) * LH + 30, ntick = 8, failed = 0;
    for (i = 0; i < n; i++) { if (r[i].end > t_end) t_end = r[i].end; if (r[i].status) failed++; }
    sx = (double)(W - LM - RM) / (double)t_end;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", out);
    put_html(out, title);
    fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header><h1>", style);
    put_html(out, title);
    fputs("</h1></header>\n<main>\n<section><h2>Job slots over time</h2>\n", out);
    fprintf(out, "<p>%d rule%s ran in %.1f ms on %d lane%s%s. Each lane is one of make's job slots (-j); each bar one rule, "
                 "from its first command to its end. A rule starts only when every rule it depends on is over: "
                 "the engine grants its target's variable once the prerequisites' writes are done.</p>\n",
            n, n == 1 ? "" : "s", (double)t_end / 1000.0, nl, nl == 1 ? "" : "s", failed ? " (failed rules in red)" : "");
    fprintf(out, "<div id=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"rules over time\">\n", W, height, W, height);
    fputs("<defs><marker id=\"head\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#c05a00\"/></marker></defs>\n", out);
    for (k = 0; k <= ntick; k++) {   /* the time axis */
        double x = LM + (double)(W - LM - RM) * k / ntick;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eceef2\"/><text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\" fill=\"#6a7385\">%.1f ms</text>\n",
                x, TOP - 6, x, height - 22, x, height - 8, (double)t_end / 1000.0 * k / ntick);
    }
    for (k = 0; k < nl; k++)
        fprintf(out, "<g class=\"lane\" data-lane=\"%d\"><rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/><text x=\"8\" y=\"%d\" font-size=\"13\" fill=\"#4a5468\">slot %d</text></g>\n",
                k, TOP + k * LH, W, LH, k % 2 ? "#fafbfc" : "#f1f3f6", TOP + k * LH + LH / 2 + 5, k + 1);
    for (i = 0; i < n; i++) {
        double x = LM + (double)r[i].start * sx, w = (double)(r[i].end - r[i].start) * sx;
        if (w < 3) w = 3;
        fprintf(out, "<g class=\"bar %s\" tabindex=\"0\" data-lane=\"%d\" data-start=\"%lld\" data-end=\"%lld\" data-status=\"%d\" data-target=\"",
                r[i].status ? "failed" : "ok", r[i].lane, r[i].start, r[i].end, r[i].status);
        put_html(out, r[i].target);
        fputs("\" data-pre=\"", out);
        for (k = 0; k < r[i].npre; k++) { if (k) fputs("&#9;", out); put_html(out, r[i].pre[k]); }
        fprintf(out, "\"><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"4\"/>", x, TOP + r[i].lane * LH + 6, w, LH - 12);
        fprintf(out, "<text x=\"%.1f\" y=\"%d\" font-size=\"13\" fill=\"#123a6b\" clip-path=\"inset(0)\">", x + 5, TOP + r[i].lane * LH + LH / 2 + 5);
        put_html(out, r[i].target);
        fputs("</text><title>", out);
        put_html(out, r[i].target);
        fprintf(out, ": %.1f to %.1f ms; needs:", (double)r[i].start / 1000.0, (double)r[i].end / 1000.0);
        for (k = 0; k < r[i].npre; k++) { fputs(k == r[i].oo_at ? " | " : " ", out); put_html(out, r[i].pre[k]); }
        if (!r[i].npre) fputs(" nothing", out);
        fputs("</title></g>\n", out);
    }
    fputs("<g id=\"arrows\"></g>\n</svg></div>\n", out);
    fputs("<div class=\"legend\">Marks: <span class=\"key\" style=\"background:#d6e8ff;border-color:#1f5fae\"></span>a rule that succeeded"
          "<span class=\"key\" style=\"background:#fde2e2;border-color:#c03030\"></span>a rule that failed"
          "<span class=\"key\" style=\"background:#1f5fae;border-color:#1f5fae\"></span>the rule pointed at"
          "<span class=\"key\" style=\"background:#ffe9d6;border-color:#c05a00\"></span>rules it waited for (arrow: from their end to its start)"
          "<span class=\"key\" style=\"background:#e3f6e8;border-color:#2e9e5b\"></span>rules that waited for it.</div>\n", out);
    fputs("<h2>Rule</h2><div id=\"info\"></div>\n</section>\n", out);
    fputs("<section><h2>Every rule</h2><table><thead><tr><th>rule</th><th>slot</th><th>start</th><th>end</th><th>waited for the rules</th></tr></thead><tbody>\n", out);
    for (i = 0; i < n; i++) {
        int first = 1;
        fputs("<tr><td>", out);
        put_html(out, r[i].target);
        fprintf(out, "</td><td>%d</td><td>%.1f ms</td><td>%.1f ms</td><td>", r[i].lane + 1, (double)r[i].start / 1000.0, (double)r[i].end / 1000.0);
        for (k = 0; k < r[i].npre; k++)
            if (is_rule(r[i].pre[k])) { if (!first) fputs(", ", out); put_html(out, r[i].pre[k]); first = 0; }
        fputs(first ? "none</td></tr>\n" : "</td></tr>\n", out);
    }
    fprintf(out, "</tbody></table></section>\n</main>\n<pre id=\"mk-selftest\" hidden></pre>\n<script>\n%s</script>\n</body>\n</html>\n", script);
    return ferror(out) ? -1 : 0;
}

int main(int argc, char **argv) {
    rule *r = NULL;
    int n, nl, rc = 0;
    FILE *out;
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s TRACE OUT.html [title]   (TRACE from make_example --trace TRACE)\n", argv[0]);
        return 2;
    }
    if ((n = read_trace(argv[1], &r)) < 0) return 1;
    if (n > 1) qsort(r, (size_t)n, sizeof *r, by_start);
    nl = assign_lanes(r, n);
    names = (const char **)xmalloc((size_t)(n ? n : 1) * sizeof *names);
    for (nnames = 0; nnames < n; nnames++) names[nnames] = r[nnames].target;
    if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_name);
    if (!(out = fopen(argv[2], "w"))) { perror(argv[2]); rc = 1; }
    else {
        if (write_page(out, r, n, nl, argc > 3 ? argv[3] : "make run") != 0) { fprintf(stderr, "make_page: write error on %s\n", argv[2]); rc = 1; }
        if (fclose(out) != 0) { fprintf(stderr, "make_page: write error on %s\n", argv[2]); rc = 1; }
    }
    free_rules(r, n);
    free(r);
    free(names);
    return rc;
}
