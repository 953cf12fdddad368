#!/usr/bin/env python3
"""Opens an airlock report in headless Chromium and checks what a reader sees.

Usage: report-chromium.py REPORT.html SCREENSHOT_PREFIX [TEXT...]

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
no port, no network, nothing but the standard library here). The page is
loaded from file://; then:
  - no request but the page itself (Network.requestWillBeSent),
  - no console error, exception or log error (a Content-Security-Policy
    violation is one: an injected script or style would be refused and logged),
  - the DOM: one script (the page's own), no img/iframe/object/form, every
    link a #fragment that names an element of the page, no on* attribute,
    each TEXT shown as text in the page,
  - the filters: shown (scripts on), reached with the Tab key, and choosing
    "failed" leaves only failed rows,
  - screenshots, wide and narrow (PREFIX-wide.png, PREFIX-narrow.png), and
    in the narrow window nothing wider than the window.
Exit 0 when all hold, 1 with the failures on stderr, 77 when Chromium cannot
start at all (the caller skips).
"""
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, binary, profile):
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        fds = (to_child_r, from_child_w)

        def child_fds():
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--user-data-dir=" + profile, "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-sync",
             "--disable-component-update", "--disable-default-apps", "--mute-audio",
             "about:blank"],
            pass_fds=(3, 4) + fds, preexec_fn=child_fds,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        while True:
            m = self.read(timeout)
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def read(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_child], [], [], left)[0]:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\0", 1)
        return json.loads(line)

    def wait_event(self, method, timeout=60):
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            m = self.read(max(0.1, deadline - time.monotonic()))
            if m.get("method") == method:
                return m
            self.events.append(m)

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main():
    page, prefix, texts = sys.argv[1], sys.argv[2], sys.argv[3:]
    url = "file://" + os.path.abspath(page)
    binary = os.environ.get("CHROMIUM") or shutil.which("chromium") or "chromium"
    profile = tempfile.mkdtemp(prefix="airlock-chromium.")
    failures = []
    try:
        try:
            b = Browser(binary, profile)
            target = b.send("Target.createTarget", {"url": "about:blank"}, timeout=60)["targetId"]
        except (OSError, EOFError, TimeoutError, RuntimeError) as e:
            err = b.proc.stderr.read().decode(errors="replace")[-2000:] if "b" in locals() else ""
            print("chromium cannot start: %s\n%s" % (e, err), file=sys.stderr)
            return 77
        s = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Network", "Runtime", "Log", "Page"):
            b.send(domain + ".enable", session=s)
        b.send("Emulation.setDeviceMetricsOverride",
               {"width": 1200, "height": 1600, "deviceScaleFactor": 1, "mobile": False}, session=s)
        b.send("Page.navigate", {"url": url}, session=s)
        b.wait_event("Page.loadEventFired")

        def js(expr):
            r = b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=s)
            if "exceptionDetails" in r:
                raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
            return r["result"].get("value")

        def check(name, ok, detail=""):
            print(("ok   " if ok else "FAIL ") + name + (": " + str(detail) if not ok and detail else ""),
                  file=sys.stderr)
            if not ok:
                failures.append(name)

        check("one script: the page's own", js("document.scripts.length") == 1)
        check("no image, frame, object, embed, form, link or base element",
              js("document.querySelectorAll('img,iframe,object,embed,form,link,base,meta[http-equiv=refresh]').length") == 0)
        check("no on* attribute anywhere",
              js("[...document.querySelectorAll('*')].every(e => [...e.attributes].every(a => !a.name.startsWith('on')))"))
        bad_links = js("[...document.querySelectorAll('a')].filter(a => !/^#[a-z0-9-]+$/.test(a.getAttribute('href'))"
                       " || !document.getElementById(a.getAttribute('href').slice(1))).map(a => a.getAttribute('href'))")
        check("every link is a #fragment of this page", bad_links == [], bad_links)
        body = js("document.body.innerText")
        for t in texts:
            check("shows as text: " + t, t in body)
        check("headings", js("document.querySelectorAll('h1').length") == 1 and
              js("document.querySelectorAll('h2').length") >= 5)
        check("column headers have a scope",
              js("[...document.querySelectorAll('thead th')].every(th => th.getAttribute('scope') === 'col')"))
        check("the filters are shown", js("!document.getElementById('filters').hidden"))

        # The Tab key reaches the status filter.
        reached = False
        js("document.activeElement && document.activeElement.blur && document.activeElement.blur()")
        for _ in range(40):
            for kind in ("keyDown", "keyUp"):
                b.send("Input.dispatchKeyEvent", {"type": kind, "key": "Tab", "code": "Tab",
                                                  "windowsVirtualKeyCode": 9}, session=s)
            if js("document.activeElement.id") == "f-status":
                reached = True
                break
        check("the Tab key reaches the status filter", reached)
        rows = js("document.querySelectorAll('#runs tbody tr').length")
        failed = js("document.querySelectorAll('#runs tbody tr[data-failed=\"1\"]').length")
        js("var s=document.getElementById('f-status'); s.value='failed'; s.dispatchEvent(new Event('change'))")
        shown = js("[...document.querySelectorAll('#runs tbody tr')].filter(r => !r.hidden).length")
        check("the status filter leaves the %d failed of %d rows" % (failed, rows),
              shown == failed and 0 < failed < rows, shown)
        js("var s=document.getElementById('f-status'); s.value=''; s.dispatchEvent(new Event('change'))")
        check("clearing it shows all again",
              js("[...document.querySelectorAll('#runs tbody tr')].filter(r => !r.hidden).length") == rows)

        shot = b.send("Page.captureScreenshot", {"format": "png"}, session=s)
        with open(prefix + "-wide.png", "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        b.send("Emulation.setDeviceMetricsOverride",
               {"width": 400, "height": 900, "deviceScaleFactor": 1, "mobile": True}, session=s)
        time.sleep(0.3)
        width = js("document.documentElement.scrollWidth")
        check("a narrow window (400px) needs no sideways scrolling", width <= 400, width)
        shot = b.send("Page.captureScreenshot", {"format": "png"}, session=s)
        with open(prefix + "-narrow.png", "wb") as f:
            f.write(base64.b64decode(shot["data"]))

        requests = [m["params"]["request"]["url"] for m in b.events
                    if m.get("method") == "Network.requestWillBeSent"]
        check("no request but the page itself", all(u == url for u in requests),
              [u for u in requests if u != url])
        errors = []
        for m in b.events:
            meth, p = m.get("method"), m.get("params", {})
            if meth == "Runtime.exceptionThrown":
                errors.append(p["exceptionDetails"].get("text"))
            elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                errors.append(p.get("args"))
            elif meth == "Log.entryAdded" and p["entry"].get("level") in ("error", "warning"):
                errors.append(p["entry"].get("text"))
        check("no console error, exception or refused load", errors == [], errors)
        b.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
