/* SPDX-License-Identifier: MIT */
/* `airlock report`: the state directory as one self-contained HTML page
 * (docs/report.md). core/report gathers the data; this file writes it.
 *
 * Everything a command, a model or a workspace chose reaches the page only
 * through html_text(), the one escaping function, in text and in quoted
 * attribute values alike. Links are #fragments built from numbers (receipt
 * and permit ids), never from recorded text. The page loads nothing: its
 * Content-Security-Policy allows no source at all but its own inline style
 * and script, each by its SHA-256. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/clock.h"
#include "basic/dynlib.h"
#include "basic/fileio.h"
#include "basic/parse.h"
#include "basic/sha256.h"
#include "basic/text.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "core/report/report.h"
#include "core/session/session.h"
#include "core/store/store.h"
#include "ledger/ledger.h"

static const char report_usage[] =
	"usage: airlock report -o FILE.html [--since WHEN] [--workspace DIR] [--last N]\n"
	"                      [--key FILE] [--state-dir DIR]\n"
	"  WHEN: a date (2026-12-05, 2026-12-05T14:00:00Z) or an age (30m, 2h, 7d)\n";

/* ---- the one escaping function ---- */

/* Writes s (n bytes) as HTML text, safe in element content and in a quoted
 * attribute value: & < > " ' as references; a C0 control (but newline and
 * tab) or DEL as its Control Pictures symbol (ESC shows as U+241B), a C1
 * control, a bidi embedding, override or isolate and a line or paragraph
 * separator as "<U+XXXX>" in text: visible, never acted on; bytes that are
 * not UTF-8 as U+FFFD. */
static void html_text(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		unsigned c = p[i];
		if (c < 0x80) {
			i++;
			switch (c) {
			case '&':
				fputs("&amp;", f);
				continue;
			case '<':
				fputs("&lt;", f);
				continue;
			case '>':
				fputs("&gt;", f);
				continue;
			case '"':
				fputs("&quot;", f);
				continue;
			case '\'':
				fputs("&#39;", f);
				continue;
			case '\n':
			case '\t':
				fputc((int)c, f);
				continue;
			default:
				break;
			}
			if (c < 0x20)
				fprintf(f, "&#x%X;", 0x2400 + c);
			else if (c == 0x7f)
				fputs("&#x2421;", f);
			else
				fputc((int)c, f);
			continue;
		}
		/* One UTF-8 sequence, checked whole. */
		size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
		if (len == 0 || i + len > n || !utf8_is_valid(s + i, len)) {
			fputs("&#xFFFD;", f);
			i++;
			continue;
		}
		unsigned cp = len == 2 ? (c & 0x1f) << 6 | (p[i + 1] & 0x3f)
			      : len == 3
				      ? (c & 0x0f) << 12 | (p[i + 1] & 0x3f) << 6 | (p[i + 2] & 0x3f)
				      : (c & 0x07) << 18 | (p[i + 1] & 0x3f) << 12 |
						(p[i + 2] & 0x3f) << 6 | (p[i + 3] & 0x3f);
		if ((cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
		    (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029 ||
		    cp == 0x200e || cp == 0x200f || cp == 0x061c || cp == 0xfeff)
			fprintf(f, "&lt;U+%04X&gt;", cp);
		else
			fwrite(s + i, 1, len, f);
		i += len;
	}
}

static void html(FILE *f, const char *s)
{
	if (s)
		html_text(f, s, strlen(s));
}

/* ---- the page's fixed parts ---- */

static const char report_style[] =
	":root{--ok:#1b7a32;--fail:#b3261e;--other:#6b5900;--bg:#fff;--fg:#1d1d1f;--mute:#595959;--line:#d0d0d0}"
	"*{box-sizing:border-box}select{max-width:100%}td,dd,p,summary{overflow-wrap:anywhere}th{white-space:nowrap}"
	"body{font:15px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1200px;padding:0 1rem 3rem}"
	"h1{font-size:1.6rem}h2{font-size:1.3rem;border-bottom:2px solid var(--line);padding-bottom:.2rem;margin-top:2rem}h3{font-size:1.1rem}"
	"nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3rem 1rem}"
	"a{color:#0b57d0}a:focus,select:focus,summary:focus{outline:3px solid #f9ab00;outline-offset:2px}"
	"code,pre{font:13px/1.4 ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}"
	"table{border-collapse:collapse;width:100%;margin:.5rem 0}"
	"th,td{border-bottom:1px solid var(--line);padding:.3rem .4rem;text-align:left;vertical-align:top}"
	"thead th{background:#f3f3f3}"
	".st{display:inline-block;padding:0 .35rem;border-radius:3px;color:#fff;font-weight:600;white-space:nowrap}"
	".st-ok{background:var(--ok)}.st-fail{background:var(--fail)}.st-other{background:var(--other)}"
	"td.dur{white-space:nowrap}.bar{display:inline-block;width:6rem;height:.6rem;background:#eee;margin-right:.3rem;vertical-align:middle}"
	".bar span{display:block;height:100%;background:#5b6ee1}"
	".w0{width:1%}.w1{width:5%}.w2{width:10%}.w3{width:15%}.w4{width:20%}.w5{width:25%}.w6{width:30%}"
	".w7{width:35%}.w8{width:40%}.w9{width:45%}.w10{width:50%}.w11{width:55%}.w12{width:60%}"
	".w13{width:65%}.w14{width:70%}.w15{width:75%}.w16{width:80%}.w17{width:85%}.w18{width:90%}"
	".w19{width:95%}.w20{width:100%}"
	".filters{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;margin:.5rem 0}"
	".note{color:var(--mute)}"
	"dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0}"
	"pre.diff{background:#f7f7f7;border:1px solid var(--line);padding:.4rem;overflow-x:auto}"
	".add{background:#e6ffec;display:block}.del{background:#ffebe9;display:block}.hunk{color:#6639ba;display:block}"
	".permit{border:1px solid var(--line);border-radius:4px;padding:0 1rem;margin:1rem 0}"
	"@media (max-width:700px){table.stack thead{position:absolute;left:-9999px}"
	"table.stack tr{display:block;border-bottom:2px solid var(--line);padding:.3rem 0}"
	"table.stack tr[hidden]{display:none}"
	"table.stack td,table.stack th{display:block;border:0;padding:.1rem .2rem}"
	"table.stack td::before,table.stack tbody th::before{content:attr(data-label) \": \";font-weight:600}"
	"dl{grid-template-columns:1fr}}";

static const char report_script[] =
	"(function(){"
	"var f=document.getElementById('filters');if(!f)return;f.hidden=false;"
	"var s=document.getElementById('f-status'),w=document.getElementById('f-ws'),"
	"c=document.getElementById('f-count'),rows=document.querySelectorAll('#runs tbody tr');"
	"function apply(){var n=0;for(var i=0;i<rows.length;i++){var r=rows[i],"
	"ok=(!s.value||(s.value==='failed'?r.getAttribute('data-failed')==='1':r.getAttribute('data-status')===s.value))"
	"&&(!w.value||r.getAttribute('data-ws')===w.value);r.hidden=!ok;if(ok)n++;}"
	"c.textContent=n+' of '+rows.length+' runs shown';}"
	"s.addEventListener('change',apply);w.addEventListener('change',apply);apply();"
	"})();";

/* 'sha256-<base64>' of text, for the Content-Security-Policy. */
static char *report_csp_hash(const char *text)
{
	uint8_t digest[SHA256_DIGEST_BYTES];
	sha256_raw(text, strlen(text), digest);
	return base64_encode(digest, sizeof(digest));
}

/* ---- the sections ---- */

static bool report_run_shown(const struct report *r, uint64_t id)
{
	size_t lo = 0, hi = r->n_runs; /* newest first: ids decreasing */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->runs[mid].id == id)
			return true;
		if (r->runs[mid].id > id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* A receipt id: a link to its row when the timeline shows it. */
static void report_receipt_ref(FILE *f, const struct report *r, uint64_t id)
{
	if (report_run_shown(r, id))
		fprintf(f, "<a href=\"#run-%llu\">receipt %llu</a>", (unsigned long long)id,
			(unsigned long long)id);
	else
		fprintf(f, "receipt %llu", (unsigned long long)id);
}

static void report_argv(FILE *f, char *const *argv)
{
	fputs("<code>", f);
	for (size_t i = 0; argv && argv[i]; i++) {
		const char *a = argv[i];
		bool plain = *a && strpbrk(a, " \t\n'\"\\$`*?;&|<>()") == NULL;
		if (i)
			fputc(' ', f);
		if (!plain)
			fputc('\'', f); /* escaped by nobody: a fixed character */
		html(f, a);
		if (!plain)
			fputc('\'', f);
	}
	fputs("</code>", f);
}

static void report_header(FILE *f, const struct report *r, const struct report_options *o)
{
	fputs("<header><h1>airlock report</h1><p>State directory <code>", f);
	html(f, r->state_dir);
	fputs("</code>, generated ", f);
	html(f, r->generated_at);
	fputs(".", f);
	if (o->since || o->workspace) {
		fputs(" Only runs", f);
		if (o->since) {
			fputs(" started at or after ", f);
			html(f, o->since);
		}
		if (o->workspace) {
			fputs(" in <code>", f);
			html(f, o->workspace);
			fputs("</code>", f);
		}
		fputs(".", f);
	}
	fputs("</p><nav aria-label=\"Sections\"><ul><li><a href=\"#summary\">Summary</a></li>"
	      "<li><a href=\"#timeline\">Timeline</a></li><li><a href=\"#failures\">Failures</a></li>"
	      "<li><a href=\"#permits\">Permits</a></li><li><a href=\"#ledger\">Ledger</a></li></ul></nav></header>\n",
	      f);
}

static void report_summary(FILE *f, const struct report *r)
{
	size_t open = 0;
	for (size_t i = 0; i < r->n_failures; i++)
		open += r->failures[i].open;
	fputs("<section id=\"summary\" aria-labelledby=\"h-summary\"><h2 id=\"h-summary\">Summary</h2>",
	      f);
	if (r->no_state)
		fputs("<p>There is no state directory yet: nothing was recorded.</p>", f);
	fprintf(f,
		"<table><caption>Totals</caption><tbody>"
		"<tr><th scope=\"row\">Runs</th><td id=\"n-runs\">%zu</td></tr>"
		"<tr><th scope=\"row\">Runs that failed</th><td id=\"n-failed\">%zu</td></tr>"
		"<tr><th scope=\"row\">Open failures</th><td id=\"n-open\">%zu</td></tr>"
		"<tr><th scope=\"row\">Closed failures</th><td id=\"n-closed\">%zu</td></tr>"
		"<tr><th scope=\"row\">Permits</th><td id=\"n-permits\">%zu</td></tr>",
		r->runs_total, r->runs_failed, open, r->n_failures - open, r->n_permits);
	for (size_t i = 0; i < r->n_statuses; i++) {
		fputs("<tr><th scope=\"row\">Status ", f);
		html(f, r->statuses[i].name);
		fprintf(f, "</th><td>%zu</td></tr>", r->statuses[i].n);
	}
	fputs("</tbody></table>", f);
	if (r->index_skipped)
		fprintf(f, "<p class=\"note\">%zu damaged index line(s) skipped.</p>",
			r->index_skipped);
	if (r->permits_damaged)
		fprintf(f, "<p class=\"note\">%zu damaged permit record(s) skipped.</p>",
			r->permits_damaged);
	fputs("</section>\n", f);
}

/* libm, opened when a page is written: no other command uses it, and a
 * library linked is one every airlock process maps and relocates at start
 * (a hook's call above all, issue 22). */
static struct {
	__typeof__(log1p) *log1p;
	__typeof__(lround) *lround;
} libm;

static struct dynlib libm_lib = DYNLIB_INIT("libm", NULL);

static int report_libm_load(struct error *err)
{
	static const char *const sonames[] = { "libm.so.6", NULL };
	static const struct dynlib_symbol symbols[] = {
		{ "log1p", (void **)&libm.log1p },
		{ "lround", (void **)&libm.lround },
		{ NULL, NULL },
	};

	return dynlib_load(&libm_lib, sonames, symbols, err);
}

/* The bar's width class: the duration on a log scale against the longest.
 * libm is loaded (report_libm_load()). */
static int report_bar(int64_t ms, int64_t max)
{
	if (ms <= 0 || max <= 0)
		return 0;
	int w = (int)libm.lround(20.0 * libm.log1p((double)ms) / libm.log1p((double)max));
	return w < 0 ? 0 : w > 20 ? 20 : w;
}

static void report_status_badge(FILE *f, bool failed, const char *status)
{
	bool ok = !failed;

	if (strcmp(status, "cancelled") == 0) { /* neither: docs/gate.md */
		fputs("<span class=\"st st-other\">&#x2298; cancelled</span>", f);
		return;
	}
	fprintf(f, "<span class=\"st %s\">%s", ok ? "st-ok" : "st-fail",
		ok ? "&#x2713; ok" : "&#x2717; failed");
	/* "exited" says nothing the exit column does not; the others do
	 * (timeout, not_found, ...) */
	if (strcmp(status, "exited") != 0) {
		fputc(' ', f);
		html(f, status);
	}
	fputs("</span>", f);
}

static void report_timeline(FILE *f, const struct report *r)
{
	fputs("<section id=\"timeline\" aria-labelledby=\"h-timeline\"><h2 id=\"h-timeline\">Timeline</h2>",
	      f);
	fputs("<div class=\"filters\" id=\"filters\" hidden><label for=\"f-status\">Status</label>"
	      "<select id=\"f-status\"><option value=\"\">all</option><option value=\"failed\">failed</option>",
	      f);
	for (size_t i = 0; i < r->n_statuses; i++) {
		fputs("<option value=\"", f);
		html(f, r->statuses[i].name);
		fputs("\">", f);
		html(f, r->statuses[i].name);
		fputs("</option>", f);
	}
	fputs("</select><label for=\"f-ws\">Workspace</label><select id=\"f-ws\"><option value=\"\">all</option>",
	      f);
	for (size_t i = 0; i < r->n_workspaces; i++) {
		fputs("<option value=\"", f);
		html(f, r->workspaces[i]);
		fputs("\">", f);
		html(f, r->workspaces[i]);
		fputs("</option>", f);
	}
	fputs("</select><span id=\"f-count\" role=\"status\" aria-live=\"polite\"></span></div>"
	      "<noscript><p class=\"note\">Filtering needs scripts; every run is listed.</p></noscript>",
	      f);
	if (r->runs_total > r->n_runs)
		fprintf(f, "<p class=\"note\" id=\"capped\">The newest %zu of %zu runs are listed; narrow the report with <code>--since</code> or <code>--workspace</code> to see older ones (<code>airlock receipts</code> lists all).</p>",
			r->n_runs, r->runs_total);
	if (r->n_runs == 0) {
		fputs("<p>No runs.</p></section>\n", f);
		return;
	}
	int64_t max = 0;
	for (size_t i = 0; i < r->n_runs; i++)
		if (r->runs[i].duration_ms > max)
			max = r->runs[i].duration_ms;
	fputs("<table id=\"runs\" class=\"stack\"><caption>Runs, newest first</caption><thead><tr>"
	      "<th scope=\"col\">Receipt</th><th scope=\"col\">Started</th><th scope=\"col\">Status</th>"
	      "<th scope=\"col\">Exit</th><th scope=\"col\">Duration</th><th scope=\"col\">Command</th>"
	      "<th scope=\"col\">Workspace</th></tr></thead><tbody>\n",
	      f);
	for (size_t i = 0; i < r->n_runs; i++) {
		const struct report_run *x = &r->runs[i];
		fprintf(f, "<tr id=\"run-%llu\" data-failed=\"%d\" data-status=\"",
			(unsigned long long)x->id, x->failed);
		html(f, x->status);
		fputs("\" data-ws=\"", f);
		html(f, x->cwd);
		fprintf(f, "\"><th scope=\"row\" data-label=\"Receipt\">%llu</th><td data-label=\"Started\">",
			(unsigned long long)x->id);
		html(f, x->started_at);
		fputs("</td><td data-label=\"Status\">", f);
		report_status_badge(f, x->failed, x->status);
		fputs("</td><td data-label=\"Exit\">", f);
		if (x->has_exit)
			fprintf(f, "%lld", (long long)x->exit_code);
		else
			fputs("&#x2014;", f);
		fprintf(f, "</td><td class=\"dur\" data-label=\"Duration\"><span class=\"bar\" aria-hidden=\"true\"><span class=\"w%d\"></span></span>%lld ms</td><td data-label=\"Command\">",
			report_bar(x->duration_ms, max), (long long)x->duration_ms);
		report_argv(f, x->argv);
		fputs("</td><td data-label=\"Workspace\"><code>", f);
		html(f, x->cwd);
		fputs("</code></td></tr>\n", f);
	}
	fputs("</tbody></table></section>\n", f);
}

static void report_close_how(FILE *f, const struct report *r, const struct report_failure *x)
{
	const char *m = x->move ? x->move : "";
	if (strcmp(m, "rerun") == 0) {
		fputs("the same command succeeded: ", f);
		report_receipt_ref(f, r, x->by_receipt);
	} else if (strcmp(m, "fixes") == 0) {
		fputs("a fix (<code>--fixes</code>)", f);
		if (x->fix_receipt) {
			fputs(", ", f);
			report_receipt_ref(f, r, x->fix_receipt);
		}
		fputs(", then the re-run of the failed command: ", f);
		report_receipt_ref(f, r, x->by_receipt);
	} else if (strcmp(m, "ack-approved") == 0) {
		fputs("the approver&#39;s acknowledgement, signed by key <code>", f);
		html(f, x->approver);
		fputs("</code>: &#x201C;", f);
		html(f, x->reason);
		fputs("&#x201D;", f);
	} else if (strcmp(m, "ack-read-only") == 0) {
		fputs("acknowledged (the command only reads): &#x201C;", f);
		html(f, x->reason);
		fputs("&#x201D;", f);
	} else {
		html(f, m);
	}
}

static void report_failures(FILE *f, const struct report *r)
{
	fputs("<section id=\"failures\" aria-labelledby=\"h-failures\"><h2 id=\"h-failures\">Failures</h2>",
	      f);
	if (r->n_failures == 0) {
		fputs("<p>No failures were opened.</p></section>\n", f);
		return;
	}
	fputs("<table id=\"failure-table\" class=\"stack\"><caption>Open failures first, then closed ones</caption><thead><tr>"
	      "<th scope=\"col\">Failure</th><th scope=\"col\">State</th><th scope=\"col\">Command</th>"
	      "<th scope=\"col\">Scope</th><th scope=\"col\">How it closed</th><th scope=\"col\">Closed at</th>"
	      "</tr></thead><tbody>\n",
	      f);
	for (size_t i = 0; i < r->n_failures; i++) {
		const struct report_failure *x = &r->failures[i];
		fprintf(f, "<tr id=\"failure-%llu\" class=\"%s\"><th scope=\"row\" data-label=\"Failure\">",
			(unsigned long long)x->receipt, x->open ? "open" : "closed");
		report_receipt_ref(f, r, x->receipt);
		fprintf(f, "</th><td data-label=\"State\"><span class=\"st %s\">%s</span></td><td data-label=\"Command\"><code>",
			x->open ? "st-fail" : "st-ok", x->open ? "&#x2717; open" : "&#x2713; closed");
		html(f, x->argv_text);
		fputs("</code>", f);
		if (x->output && *x->output) {
			fputs("<details><summary>Output</summary><pre class=\"output\"><code>", f);
			html(f, x->output);
			fputs("</code></pre></details>", f);
		}
		fputs("</td><td data-label=\"Scope\"><code>", f);
		html(f, x->scope);
		fputs("</code></td><td data-label=\"How it closed\">", f);
		if (x->open) {
			fputs("still open", f);
			if (x->rejected) {
				fputs("; a close record was rejected: ", f);
				html(f, x->rejected);
			}
		} else {
			report_close_how(f, r, x);
		}
		fputs("</td><td data-label=\"Closed at\">", f);
		html(f, x->closed_at);
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody></table></section>\n", f);
}

static void report_diff_body(FILE *f, const char *d)
{
	fputs("<pre class=\"diff\"><code>", f);
	while (*d) {
		const char *nl = strchr(d, '\n');
		size_t n = nl ? (size_t)(nl - d) + 1 : strlen(d);
		const char *cls = *d == '+' ? "add" : *d == '-' ? "del" : *d == '@' ? "hunk" : NULL;
		if (cls)
			fprintf(f, "<span class=\"%s\">", cls);
		html_text(f, d, cls && nl ? n - 1 : n);
		if (cls)
			fputs("</span>", f);
		d += n;
	}
	fputs("</code></pre>", f);
}

static void report_files(FILE *f, const struct report_permit *p)
{
	fputs("<h4>Change set</h4>", f);
	if (p->files_error) {
		fputs("<p>", f);
		html(f, p->files_error);
		fputs("</p>", f);
		return;
	}
	if (p->files_total == 0) {
		fputs("<p>No change.</p>", f);
		return;
	}
	fputs("<ul class=\"files\">", f);
	for (size_t i = 0; i < p->n_files; i++) {
		const struct report_file *x = &p->files[i];
		fputs("<li><details><summary><code>", f);
		html(f, x->path);
		fputs("</code> &#x2014; ", f);
		html(f, x->change);
		if (x->type) {
			fputs(" ", f);
			html(f, x->type);
		}
		if (x->size >= 0)
			fprintf(f, ", %lld bytes", (long long)x->size);
		fputs("</summary>", f);
		if (x->diff && *x->diff) {
			fputs("<p class=\"note\">--- a/", f);
			html(f, x->path);
			fputs(" +++ b/", f);
			html(f, x->path);
			fputs("</p>", f);
			report_diff_body(f, x->diff);
		} else if (x->diff) {
			fputs("<p class=\"note\">The content is the same.</p>", f);
		} else if (x->summary) {
			fputs("<p class=\"note\">", f);
			html(f, x->summary);
			fputs("</p>", f);
		} else {
			fputs("<p class=\"note\">No content to compare for this change.</p>", f);
		}
		fputs("</details></li>", f);
	}
	fputs("</ul>", f);
	if (p->files_total > p->n_files)
		fprintf(f, "<p class=\"note\">%zu more changes are not shown (<code>airlock permit show %llu</code>).</p>",
			p->files_total - p->n_files, (unsigned long long)p->id);
}

static void report_dd(FILE *f, const char *term, const char *value, bool code)
{
	fprintf(f, "<dt>%s</dt><dd>%s", term, code ? "<code>" : "");
	html(f, value ? value : "");
	fprintf(f, "%s</dd>", code ? "</code>" : "");
}

static void report_permit(FILE *f, const struct report *r, const struct report_permit *p)
{
	bool bad = strcmp(p->state, "ROLLED_BACK") == 0 ||
		   strcmp(p->state, "DRY_RUN_FAILED") == 0 || strcmp(p->state, "CONFLICT") == 0 ||
		   strncmp(p->state, "REJECTED", 8) == 0 || strcmp(p->state, "INVALID") == 0 ||
		   strcmp(p->state, "DENIED") == 0 || strcmp(p->state, "UNEXPECTED_PATH") == 0 ||
		   strcmp(p->state, "EXPECTED_PATH_MISSING") == 0;
	fprintf(f, "<article class=\"permit\" id=\"permit-%llu\" aria-labelledby=\"h-permit-%llu\"><h3 id=\"h-permit-%llu\">Permit %llu",
		(unsigned long long)p->id, (unsigned long long)p->id, (unsigned long long)p->id,
		(unsigned long long)p->id);
	if (p->label) {
		fputs(": ", f);
		html(f, p->label);
	}
	fprintf(f, " <span class=\"st %s\">",
		bad				   ? "st-fail"
		: strcmp(p->state, "APPLIED") == 0 ? "st-ok"
						   : "st-other");
	html(f, p->state);
	fputs("</span></h3><dl>", f);
	report_dd(f, "Reason (the model&#39;s)", p->reason, false);
	report_dd(f, p->via_shell ? "Command (shell)" : "Command", p->argv_text, true);
	report_dd(f, "Workspace", p->workspace, true);
	report_dd(f, "Proposed", p->created_at, false);
	fprintf(f, "<dt>Risk</dt><dd>%d (declared %d, classified %d", p->risk, p->risk_declared,
		p->risk_classified);
	if (p->classify_rule && *p->classify_rule) {
		fputs(" by ", f);
		html(f, p->classify_rule);
	}
	fprintf(f, ", observed %d", p->risk_observed);
	if (p->observed_why && *p->observed_why) {
		fputs(": ", f);
		html(f, p->observed_why);
	}
	fputs(")</dd>", f);
	if (p->dryrun_id) {
		fputs("<dt>Dry run</dt><dd>", f);
		report_receipt_ref(f, r, p->dryrun_id);
		if (p->verdict) {
			fputs(", verdict ", f);
			html(f, p->verdict);
		}
		if (p->dryrun_state) {
			fputs(", ", f);
			html(f, p->dryrun_state);
		}
		fputs("</dd>", f);
	}
	report_dd(f, "Approved by key", p->approver_key ? p->approver_key : "none", true);
	fputs("</dl><h4>History</h4><table class=\"stack\"><thead><tr><th scope=\"col\">At</th><th scope=\"col\">Event</th>"
	      "<th scope=\"col\">State</th><th scope=\"col\">Details</th></tr></thead><tbody>",
	      f);
	for (size_t i = 0; i < p->n_history; i++) {
		const struct report_event *e = &p->history[i];
		fputs("<tr><td data-label=\"At\">", f);
		html(f, e->at);
		fputs("</td><th scope=\"row\" data-label=\"Event\">", f);
		html(f, e->event);
		fputs("</th><td data-label=\"State\">", f);
		if (e->from) {
			html(f, e->from);
			fputs(" &#x2192; ", f);
		}
		html(f, e->to);
		fputs("</td><td data-label=\"Details\"><code>", f);
		html(f, e->detail);
		fputs("</code></td></tr>", f);
	}
	fputs("</tbody></table>", f);
	report_files(f, p);
	fputs("</article>\n", f);
}

static void report_permits(FILE *f, const struct report *r)
{
	fputs("<section id=\"permits\" aria-labelledby=\"h-permits\"><h2 id=\"h-permits\">Permits</h2>",
	      f);
	if (r->n_permits == 0)
		fputs("<p>No permits.</p>", f);
	for (size_t i = 0; i < r->n_permits; i++)
		report_permit(f, r, &r->permits[i]);
	fputs("</section>\n", f);
}

static void report_ledger(FILE *f, const struct report *r)
{
	const struct report_ledger *l = &r->ledger;
	fputs("<section id=\"ledger\" aria-labelledby=\"h-ledger\"><h2 id=\"h-ledger\">Ledger</h2>", f);
	if (!l->present) {
		fputs("<p>No ledger yet.</p></section>\n", f);
		return;
	}
	if (l->error) {
		fputs("<p id=\"ledger-verdict\"><span class=\"st st-fail\">&#x2717; not verified</span> ",
		      f);
		html(f, l->error);
		fputs("</p></section>\n", f);
		return;
	}
	bool ok = strcmp(l->verdict, "OK") == 0;
	fprintf(f, "<p id=\"ledger-verdict\">Verified at report time: <span class=\"st %s\">%s ",
		ok ? "st-ok" : "st-fail", ok ? "&#x2713;" : "&#x2717;");
	html(f, l->verdict);
	fputs("</span></p>", f);
	if (l->own_key)
		fputs("<p class=\"note\">Verified with the state directory&#39;s own key: this shows the log is whole and its records match it, not who signed it. Give <code>--key FILE</code>, a copy kept elsewhere, for that.</p>",
		      f);
	fprintf(f, "<dl><dt>Entries</dt><dd id=\"ledger-size\">%llu</dd><dt>Last checkpoint</dt><dd>size %llu (%llu entries after it, not yet signed)</dd><dt>Root</dt><dd><code>",
		(unsigned long long)l->size, (unsigned long long)l->checkpoint_size,
		(unsigned long long)l->unsigned_entries);
	html(f, l->root_b64);
	fputs("</code></dd></dl>", f);
	if (l->checkpoint) {
		fputs("<details><summary>The signed checkpoint</summary><pre><code>", f);
		html(f, l->checkpoint);
		fputs("</code></pre></details>", f);
	}
	if (l->n_findings) {
		fputs("<h3>Findings</h3><ul>", f);
		for (size_t i = 0; i < l->n_findings; i++) {
			fputs("<li><code>", f);
			html(f, l->findings[i]);
			fputs("</code></li>", f);
		}
		fputs("</ul>", f);
	}
	fputs("</section>\n", f);
}

static int report_write(FILE *f, const struct report *r, const struct report_options *o)
{
	cleanup_free char *style_hash = report_csp_hash(report_style);
	cleanup_free char *script_hash = report_csp_hash(report_script);
	if (!style_hash || !script_hash)
		return -ENOMEM;
	fprintf(f,
		"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'sha256-%s'; script-src 'sha256-%s'; img-src 'none'; font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'\">\n"
		"<meta name=\"referrer\" content=\"no-referrer\">\n"
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		"<title>airlock report</title>\n<style>%s</style></head>\n<body>\n",
		style_hash, script_hash, report_style);
	report_header(f, r, o);
	fputs("<main>\n", f);
	report_summary(f, r);
	report_timeline(f, r);
	report_failures(f, r);
	report_permits(f, r);
	report_ledger(f, r);
	fprintf(f, "</main>\n<script>%s</script>\n</body></html>\n", report_script);
	return 0;
}

/* ---- options ---- */

/* WHEN as RFC 3339 UTC with milliseconds: a date, a UTC time, or an age. */
int report_parse_since(const char *s, char *buf, size_t size)
{
	int y, mo, d, h = 0, mi = 0, sec = 0, ms = 0, consumed = 0;
	uint64_t age_ms;
	size_t n = strlen(s);

	if (n && s[n - 1] >= 'a' && s[n - 1] <= 'z' && parse_duration_ms(s, &age_ms) == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		uint64_t age_ns = age_ms * 1000000ull;
		clock_format_rfc3339(age_ns < now ? now - age_ns : 0, buf, size);
		return 0;
	}
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &consumed) != 3 || consumed != 10)
		return -EINVAL;
	const char *t = s + 10;
	if (*t == 'T') {
		int c2 = 0;
		if (sscanf(t, "T%2d:%2d:%2d%n", &h, &mi, &sec, &c2) != 3 || c2 != 9)
			return -EINVAL;
		t += c2;
		if (*t == '.') {
			int c3 = 0;
			if (sscanf(t, ".%3d%n", &ms, &c3) != 1 || c3 != 4)
				return -EINVAL;
			t += c3;
		}
		if (strcmp(t, "Z") != 0)
			return -EINVAL;
	} else if (*t) {
		return -EINVAL;
	}
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 ||
	    h < 0 || mi < 0 || sec < 0 || ms < 0)
		return -EINVAL;
	struct tm tm = {
		.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = sec
	};
	time_t when = timegm(&tm);
	if (when < 0 || tm.tm_mday != d) /* 2026-02-31 normalised away */
		return -EINVAL;
	clock_format_rfc3339((uint64_t)when * 1000000000ull + (uint64_t)ms * 1000000ull, buf, size);
	return 0;
}

/* The verifier key, from a file outside the state directory (as `ledger
 * verify` takes it). */
static int report_load_vkey(const char *path, const char *state_dir, struct ledger_vkey *ret)
{
	cleanup_free char *text = NULL, *real_key = realpath(path, NULL);
	cleanup_free char *real_state = state_dir ? realpath(state_dir, NULL) : NULL;
	size_t n, k = real_state ? strlen(real_state) : 0;
	struct error err = { 0 };

	if (real_key && real_state && strncmp(real_key, real_state, k) == 0 &&
	    (real_key[k] == '/' || real_key[k] == '\0')) {
		cli_error("report: the key %s is inside the state directory; give a copy kept elsewhere (`airlock ledger key > FILE`)",
			  path);
		return -EPERM;
	}
	if (file_read_capped(AT_FDCWD, path, 1 << 16, &text, &n, &err) < 0 ||
	    ledger_vkey_parse(text, ret, &err) < 0) {
		cli_error("report: --key %s: %s", path, err.msg);
		return -EINVAL;
	}
	return 0;
}

/* Whether the file path would land in the state directory (its parent
 * directory, resolved, is it or below it): the page is never written among
 * the records it reports. */
static bool report_out_in_state(const char *out, const char *state_dir)
{
	cleanup_free char *copy = strdup(out);
	if (!copy || !state_dir)
		return false;
	char *slash = strrchr(copy, '/');
	const char *parent = !slash ? "." : slash == copy ? "/" : (*slash = '\0', copy);
	cleanup_free char *real_parent = realpath(parent, NULL);
	cleanup_free char *real_state = realpath(state_dir, NULL);
	if (!real_parent || !real_state)
		return false;
	size_t k = strlen(real_state);
	return strncmp(real_parent, real_state, k) == 0 &&
	       (real_parent[k] == '/' || real_parent[k] == '\0');
}

struct report_args {
	const char *state_dir, *out, *key, *workspace_arg, *since_arg;
	char since[32];
	char *workspace;
	uint64_t last;
};

static int report_parse(int argc, char **argv, struct report_args *a)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "since", required_argument, NULL, 'S' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "key", required_argument, NULL, 'k' },
		{ "last", required_argument, NULL, 'n' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;
	while ((opt = cli_option(argc, argv, "ho:", options)) != -1) {
		switch (opt) {
		case 'o':
			a->out = optarg;
			break;
		case 'S':
			a->since_arg = optarg;
			break;
		case 'w':
			a->workspace_arg = optarg;
			break;
		case 'k':
			a->key = optarg;
			break;
		case 'n':
			if (parse_u64(optarg, &a->last) < 0 || a->last == 0 || a->last > 1000000) {
				cli_error("report: --last '%s' must be a count of runs from 1 to 1000000",
					  optarg);
				return EXIT_AIRLOCK_ERROR;
			}
			break;
		case 's':
			a->state_dir = optarg;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return -1;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (!cli_no_operands(argc, argv))
		return EXIT_AIRLOCK_ERROR;
	if (!a->out || !*a->out) {
		cli_error("report: give the page's file with -o FILE.html");
		return EXIT_AIRLOCK_ERROR;
	}
	if (a->since_arg && report_parse_since(a->since_arg, a->since, sizeof(a->since)) < 0) {
		cli_error("report: --since '%s' must be a date (2026-12-05, 2026-12-05T14:00:00Z) or an age (30m, 2h, 7d)",
			  a->since_arg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (a->workspace_arg) {
		struct stat st;
		a->workspace = realpath(a->workspace_arg, NULL);
		if (!a->workspace || stat(a->workspace, &st) < 0 || !S_ISDIR(st.st_mode)) {
			cli_error("report: --workspace '%s' is not a directory", a->workspace_arg);
			return EXIT_AIRLOCK_ERROR;
		}
	}
	return EXIT_OK;
}

int cmd_report(int argc, char **argv)
{
	struct report_args a = { 0 };
	int status = report_parse(argc, argv, &a);
	cleanup_free char *workspace = a.workspace;
	if (status != EXIT_OK)
		return status < 0 ? EXIT_OK : status;

	cleanup_with(session_free) struct session session = { 0 };
	struct store *store = NULL;
	status = cli_session_open(&session, a.state_dir);
	if (status == EXIT_OK)
		status = cli_open_store(&session, &store);
	if (status != EXIT_OK)
		return status;
	if (report_out_in_state(a.out, session.state_dir)) {
		cli_error("report: %s is inside the state directory; write the page elsewhere", a.out);
		return EXIT_AIRLOCK_ERROR;
	}
	struct ledger_vkey vkey;
	if (a.key && report_load_vkey(a.key, session.state_dir, &vkey) < 0)
		return EXIT_AIRLOCK_ERROR;

	struct report_options o = {
		.since = a.since_arg ? a.since : NULL,
		.workspace = workspace,
		.timeline_max = (size_t)a.last,
		.vkey = a.key ? &vkey : NULL,
	};
	cleanup_with(report_release) struct report r = { 0 };
	struct error err = { 0 };
	if (report_gather(store, session.state_dir, &o, &r, &err) < 0) {
		cli_error("report: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (report_libm_load(&err) < 0) {
		cli_error("report: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_free char *page = NULL;
	size_t page_n = 0;
	FILE *f = open_memstream(&page, &page_n);
	if (!f || report_write(f, &r, &o) < 0 || fclose(f) != 0) {
		cli_error("report: out of memory");
		return EXIT_AIRLOCK_ERROR;
	}
	/* Not into the state directory's own files: a fresh file, or one
	 * replaced; never through a symlink at the name. */
	cleanup_close int fd =
		open(a.out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || fd_write_all(fd, page, page_n) < 0) {
		cli_error("report: cannot write %s: %s", a.out, strerror(errno));
		return EXIT_AIRLOCK_ERROR;
	}
	cli_print("%s\n", a.out);
	return EXIT_OK;
}
